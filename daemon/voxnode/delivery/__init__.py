"""Durable delivery of finals: the spool that numbers them (`seq`) and keeps them until every durable
output has delivered them, the journal that stores each one, the sequencer thread that stores before
any output shows, the spool's faults, and the retry of a refused final (docs/architecture.md)."""
