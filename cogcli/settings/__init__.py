"""Settings: every option declared once, the person's and the workspace's files merged, prices (genai-prices'
maintained data first: `price_data.py`; cog's own table for what it lacks), hook tables, and what the person trusts."""
