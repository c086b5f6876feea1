"""What cog does on the host for a workspace: paths opened without following links, the programs it
starts (git among them), processes drained and killed whole."""
