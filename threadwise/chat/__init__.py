"""The platform-neutral chat layer every front end shares: the conversation service (ask, explain, vote, in a
thread), what an answer looks like before any platform renders it (turn views), the guard every pressed button
goes through, who asks, the fair pool of answer workers, and hand-over between replicas.

It imports no chat platform's library and no front end: `threadwise.slack` and `threadwise.teams` are thin
peers over it, and neither imports the other.
"""
