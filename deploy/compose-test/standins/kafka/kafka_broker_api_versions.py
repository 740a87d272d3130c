"""kafka-broker-api-versions for the Kafka stand-in: asks each bootstrap broker which API
versions it serves (an ApiVersions v0 request on the Kafka wire protocol) and prints them
as Kafka's own tool does. Exits 0 only if every broker answered without error, so the
compose file's health check means what it says."""

from __future__ import annotations

import argparse
import socket
import struct
import sys

API_VERSIONS = 18
#: the names Kafka's tool prints for API keys (others print as UNKNOWN(key))
API_NAMES = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    17: "SaslHandshake",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    21: "DeleteRecords",
    22: "InitProducerId",
    24: "AddPartitionsToTxn",
    25: "AddOffsetsToTxn",
    26: "EndTxn",
    28: "TxnOffsetCommit",
    29: "DescribeAcls",
    30: "CreateAcls",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    36: "SaslAuthenticate",
    37: "CreatePartitions",
    42: "DeleteGroups",
    44: "IncrementalAlterConfigs",
    46: "ListPartitionReassignments",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
    60: "DescribeCluster",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
    71: "GetTelemetrySubscriptions",
    75: "DescribeTopicPartitions",
}


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection mid-answer")
        data += chunk
    return data


def api_versions(host: str, port: int, timeout: float = 10.0) -> list[tuple[int, int, int]]:
    """(api key, min version, max version) for every API the broker at host:port serves."""
    client_id = b"ledgerlet-healthcheck"
    correlation = 1
    header = struct.pack(">hhih", API_VERSIONS, 0, correlation, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(header)) + header)
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        body = _read_exactly(sock, size)
    got_correlation, error, count = struct.unpack_from(">ihi", body)
    if got_correlation != correlation:
        raise ConnectionError(f"answer to request {got_correlation}, not {correlation}")
    if error != 0:
        raise ConnectionError(f"ApiVersions failed with Kafka error code {error}")
    return [struct.unpack_from(">hhh", body, 10 + 6 * i) for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-broker-api-versions.sh", description=__doc__)
    parser.add_argument("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...]")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per broker (default 10)")
    args = parser.parse_args(argv)
    ok = True
    for server in args.bootstrap_server.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            versions = api_versions(host or "localhost", int(port), args.timeout)
        except (OSError, ValueError, struct.error) as exc:
            print(f"{server}: {exc}", file=sys.stderr)
            ok = False
            continue
        print(f"{server} -> (")
        lines = [f"\t{API_NAMES.get(key, 'UNKNOWN')}({key}): {low} to {high}" for key, low, high in sorted(versions)]
        print(",\n".join(lines))
        print(")")
        ok = ok and bool(versions)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
