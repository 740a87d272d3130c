#!/bin/sh
# Kafka's own tool by this name asks a broker which API versions it serves; so does this one.
exec python3 /opt/kafka/bin/kafka_broker_api_versions.py "$@"
