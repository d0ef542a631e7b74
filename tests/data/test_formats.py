"""WebDataset tar shards and TFRecord files: read real files written by independent tools, and round-trip."""

from __future__ import annotations

import io
import json
import struct
import tarfile

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from PIL import Image

import ember.data
from ember.data.read.tfrecords import masked_crc
from ember.errors import DataError


def _png(value: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((3, 2, 3), value, np.uint8)).save(buffer, format="png")
    return buffer.getvalue()


def _tar(path, members):
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_read_webdataset_groups_members_by_key_and_decodes_by_suffix(tmp_path):
    _tar(
        tmp_path / "shard-000.tar",
        [
            ("s/0001.png", _png(10)),
            ("s/0001.cls", b"4"),
            ("s/0001.json", b'{"w": 1.5}'),
            ("s/0001.txt", b"cat"),
            ("s/0002.png", _png(20)),
            ("s/0002.cls", b"7"),
            ("s/0002.json", b'{"w": 2.5}'),
            ("s/0002.txt", b"dog"),
        ],
    )
    buffer = io.BytesIO()
    np.save(buffer, np.arange(4, dtype=np.int16))
    _tar(tmp_path / "shard-001.tar", [("0003.npy", buffer.getvalue()), ("0003.cls", b"1")])
    rows = ember.data.read_webdataset(tmp_path / "shard-000.tar").take_all()
    assert [r["__key__"] for r in rows] == ["s/0001", "s/0002"]
    assert [r["cls"] for r in rows] == [4, 7] and [r["txt"] for r in rows] == ["cat", "dog"]
    assert (
        rows[1]["png"].shape == (3, 2, 3)
        and rows[1]["png"].dtype == np.uint8
        and int(rows[1]["png"][0, 0, 0]) == 20
    )
    assert rows[0]["json"] == {"w": 1.5}
    assert rows[0]["__url__"] == str(tmp_path / "shard-000.tar")
    other = ember.data.read_webdataset(tmp_path / "shard-001.tar").take_all()
    assert other[0]["npy"].tolist() == [0, 1, 2, 3] and other[0]["npy"].dtype == np.int16
    raw = ember.data.read_webdataset(tmp_path / "shard-000.tar", decoder=False).take(1)[0]
    assert raw["cls"] == b"4"
    assert ember.data.read_webdataset(tmp_path).count() == 3
    only = ember.data.read_webdataset(tmp_path / "shard-000.tar", suffixes=["cls"]).take(1)[0]
    assert set(only) == {"__key__", "__url__", "cls"}


def test_webdataset_refuses_pickled_members_and_scattered_samples(tmp_path):
    marker = tmp_path / "ran"
    payload = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
    _tar(tmp_path / "evil.tar", [("a.pkl", payload), ("a.cls", b"1")])
    with pytest.raises(DataError, match="member 'pkl' of sample 'a' is pickled"):
        ember.data.read_webdataset(tmp_path / "evil.tar").take_all()
    assert not marker.exists()
    _tar(tmp_path / "scattered.tar", [("a.cls", b"1"), ("b.cls", b"2"), ("a.txt", b"x")])
    with pytest.raises(DataError, match="members of sample 'a' in .*scattered.tar are not adjacent"):
        ember.data.read_webdataset(tmp_path / "scattered.tar").take_all()
    (tmp_path / "bad.tar").write_bytes(b"not a tar at all" * 100)
    with pytest.raises(DataError, match="bad.tar is not a readable tar file"):
        ember.data.read_webdataset(tmp_path / "bad.tar").take_all()


def test_write_webdataset_round_trips_images_labels_and_arrays(tmp_path):
    rows = [
        {
            "__key__": f"k{i}",
            "png": np.full((4, 5, 3), i, np.uint8),
            "cls": i,
            "npy": np.arange(3.0) * i,
            "json": {"i": i},
        }
        for i in range(5)
    ]
    ember.data.from_items(rows).write_webdataset(tmp_path / "out", min_rows_per_file=2)
    shards = sorted(p.name for p in (tmp_path / "out").glob("*.tar"))
    assert shards == ["part-00000.tar", "part-00001.tar", "part-00002.tar"]
    with tarfile.open(tmp_path / "out" / "part-00000.tar") as tar:  # a standard tar, readable by any tool
        assert tar.getnames() == [
            "k0.png",
            "k0.cls",
            "k0.npy",
            "k0.json",
            "k1.png",
            "k1.cls",
            "k1.npy",
            "k1.json",
        ]
    back = ember.data.read_webdataset(tmp_path / "out").take_all()
    assert [r["cls"] for r in back] == [0, 1, 2, 3, 4]
    assert all(np.array_equal(r["png"], rows[i]["png"]) for i, r in enumerate(back))
    assert all(np.array_equal(r["npy"], rows[i]["npy"]) for i, r in enumerate(back))
    assert [r["json"] for r in back] == [{"i": i} for i in range(5)]


def _example_class():
    """tf.train.Example built with Google's protobuf runtime: an encoder independent of ember's."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="ember_test_example.proto", package="ember_test", syntax="proto3"
    )

    def message(name, *fields):
        m = proto.message_type.add(name=name)
        for number, (field_name, kind, label, type_name) in enumerate(fields, 1):
            f = m.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                f.type_name = type_name
        return m

    F = descriptor_pb2.FieldDescriptorProto
    message("BytesList", ("value", F.TYPE_BYTES, F.LABEL_REPEATED, None))
    message("FloatList", ("value", F.TYPE_FLOAT, F.LABEL_REPEATED, None))
    message("Int64List", ("value", F.TYPE_INT64, F.LABEL_REPEATED, None))
    feature = message(
        "Feature",
        ("bytes_list", F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".ember_test.BytesList"),
        ("float_list", F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".ember_test.FloatList"),
        ("int64_list", F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".ember_test.Int64List"),
    )
    feature.oneof_decl.add(name="kind")
    for f in feature.field:
        f.oneof_index = 0
    entry = message("Features")
    nested = entry.nested_type.add(name="FeatureEntry")
    nested.options.map_entry = True
    nested.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    nested.field.add(
        name="value", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".ember_test.Feature"
    )
    entry.field.add(
        name="feature",
        number=1,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_REPEATED,
        type_name=".ember_test.Features.FeatureEntry",
    )
    message("Example", ("features", F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".ember_test.Features"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("ember_test.Example"))


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def test_read_tfrecords_decodes_examples_made_by_the_protobuf_runtime(tmp_path):
    Example = _example_class()
    records = []
    for i in range(3):
        ex = Example()
        ex.features.feature["label"].int64_list.value.append(i - 1)
        ex.features.feature["pixels"].float_list.value.extend([0.25 * i, 1.5])
        ex.features.feature["name"].bytes_list.value.append(f"item{i}".encode())
        ex.features.feature["tags"].bytes_list.value.extend([b"a", b"b"])
        records.append(_record(ex.SerializeToString()))
    (tmp_path / "data.tfrecords").write_bytes(b"".join(records))
    rows = ember.data.read_tfrecords(tmp_path / "data.tfrecords").take_all()
    assert [r["label"] for r in rows] == [-1, 0, 1]
    assert [r["pixels"] for r in rows] == [[0.0, 1.5], [0.25, 1.5], [0.5, 1.5]]
    assert [r["name"] for r in rows] == [b"item0", b"item1", b"item2"]
    assert rows[0]["tags"] == [b"a", b"b"]
    # ember's writer produces what the protobuf runtime parses back
    ember.data.from_items([{"label": 7, "x": [1.0, 2.0], "s": "hi"}]).write_tfrecords(tmp_path / "out")
    raw = next((tmp_path / "out").glob("*.tfrecords")).read_bytes()
    parsed = Example.FromString(raw[12:-4])
    assert list(parsed.features.feature["label"].int64_list.value) == [7]
    assert list(parsed.features.feature["x"].float_list.value) == [1.0, 2.0]
    assert list(parsed.features.feature["s"].bytes_list.value) == [b"hi"]


def test_a_corrupt_tfrecord_is_one_line_naming_the_record(tmp_path):
    ember.data.range(3).write_tfrecords(tmp_path / "out")
    path = next((tmp_path / "out").glob("*.tfrecords"))
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # inside the last record's data
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match="record 2 is corrupt \\(the data's CRC does not match\\)"):
        ember.data.read_tfrecords(path).take_all()
    path.write_bytes(bytes(data[:-3]))
    with pytest.raises(DataError, match="record 2 is corrupt \\(the file ends inside a record\\)"):
        ember.data.read_tfrecords(path).take_all()
    assert json.loads((tmp_path / "out" / "_ember_write.json").read_text())["writes"][0]["rows"] == 3
