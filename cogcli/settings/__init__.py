"""Settings: every option declared once, the person's and the workspace's files merged, prices, hook
tables, and what the person trusts."""
