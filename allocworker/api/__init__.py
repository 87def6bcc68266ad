"""The REST shim: HTTP twins of the RPC calls on the same service layer."""
