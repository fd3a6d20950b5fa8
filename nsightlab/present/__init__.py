"""What a person sees: the terminal rendering, the report (document model, builder,
HTML and Markdown writers) and the figures. Never talks to a cluster or runs anything."""
