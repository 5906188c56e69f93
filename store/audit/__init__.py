"""The audit log: appending to memoryd's hash chain, verifying it, signed checkpoints, and reading it for the
console."""
