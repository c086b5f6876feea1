"""The gate every call passes before it runs: plan mode, PreToolUse hooks, the allow list and the
person's approval, as steps of one pipeline."""
