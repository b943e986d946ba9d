"""Who may read what through the bot: the asker, and the scope of pages a conversation may use.

`Asker` says who asks and where; `PermissionService` turns it into a `Scope` (core/types.py) that retrieval
applies inside every search. Under THREADWISE_PERMISSIONS=per-user the readers come from the database, as the
last sync or permission sync read them from Confluence (`threadwise.permissions.store`).
"""

from threadwise.permissions.service import Asker, PermissionService

__all__ = ["Asker", "PermissionService"]
