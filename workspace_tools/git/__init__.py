"""git_status and git_diff, with untracked files shown as new and private keys kept out of a diff."""
