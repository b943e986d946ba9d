"""Keeping the index current with Confluence: the sync service, the admin (spaces) service, the scheduler."""
