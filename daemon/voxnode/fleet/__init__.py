"""`voxnode fleet`: the nodes of a fleet from their retained MQTT status and health."""
