"""The Microsoft Teams front end: the Teams SDK's App over the chat layer (`threadwise.chat`). Adaptive Cards,
activities, `admin …` commands, the app package, its settings, serve and doctor. It never imports
`threadwise.slack`.
"""
