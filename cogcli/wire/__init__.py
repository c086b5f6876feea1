"""What a run tells the outside: the events of the wire protocol, the emitter that stamps them,
progress coalesced for slow readers, OpenTelemetry spans, and exit codes."""
