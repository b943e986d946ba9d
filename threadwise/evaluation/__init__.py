"""`threadwise eval`: the same code path as answering, measured on ConfQuestions-style data."""
