// The task registry: see TaskRegistry.swift.
