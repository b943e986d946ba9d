"""The knowledge-gap report (`threadwise report`): what the wiki's readers could not find, which pages misled
them, which stale pages still answer, which pages disagree, and what is used most, for a window of days.

rows.py reads plain rows from the database; build.py (pure) makes the report (model.py) from them, grouping
questions with topics.py; render_md/_html/_json.py write it; service.py (`GapReports`) is the one entry.
"""
