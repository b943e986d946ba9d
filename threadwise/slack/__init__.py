"""The Slack front end: a Bolt app over the chat layer (`threadwise.chat`). Block Kit rendering, events,
buttons, `/threadwise`, the App Home, its settings, serve and doctor. It never imports `threadwise.teams`.
"""
