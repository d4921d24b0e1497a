"""benchmarks/classroom.py's student without a browser speaks the kernel websocket protocol
(v1) as Jupyter Server reads and writes it: checked against the server's own functions."""

from __future__ import annotations

import json

from jupyter_server.services.kernels.connection.base import (
    deserialize_msg_from_ws_v1,
    serialize_msg_to_ws_v1,
)

from benchmarks import classroom


def test_a_students_message_is_what_the_server_reads() -> None:
    content = {"comm_id": "c1", "target_name": "jupyter.widget.control", "data": {}}
    frame = classroom._message("s1", "comm_open", content, {"version": "1.0.0"})
    channel, parts = deserialize_msg_from_ws_v1(frame)
    header, parent, metadata, body = (json.loads(part) for part in parts)
    assert channel == "shell"
    assert header["msg_type"] == "comm_open" and header["session"] == "s1"
    assert parent == {} and metadata == {"version": "1.0.0"} and body == content


def test_a_kernels_message_is_read_back_with_its_buffers_aside() -> None:
    content = {"comm_id": "c1", "data": {"method": "update_states", "states": {"m": {}}}}
    parts = [json.dumps(p).encode() for p in ({"msg_type": "comm_msg"}, {}, {}, content)]
    frame = serialize_msg_to_ws_v1([*parts, b"\x00\x01binary buffer"], "iopub")
    assert classroom._decode(frame) == ("iopub", content)
    status = serialize_msg_to_ws_v1([b"{}", b"{}", b"{}", b'{"execution_state": "idle"}'], "iopub")
    assert classroom._decode(status) == ("iopub", {"execution_state": "idle"})


def test_a_frame_is_counted_by_its_type_and_a_comm_message_by_its_method() -> None:
    update = serialize_msg_to_ws_v1(
        [b'{"msg_type": "comm_msg"}', b"{}", b"{}", b'{"data": {"method": "update_states"}}'],
        "iopub",
    )
    assert classroom._frame_kind(update) == "comm_msg/update_states"
    assert classroom._frame_kind(classroom._message("s1", "comm_open", {})) == "comm_open"
    assert classroom._frame_kind(b"\x00\x01") == "unreadable"  # not a v1 frame: said, not raised
