"""wcp.py: reads and writes wildcpu checkpoint files (docs/checkpoint.md), independently of the
C code, so tests can build checkpoints whose CRC is valid but whose content is hostile.

    python3 wcp.py show FILE                  the header and the sections
    python3 wcp.py edit IN OUT OP [OP ...]    rewrite IN with the OPs applied, CRC recomputed

OPs:  drop=NAME                 remove a section
      set=NAME:HEX              replace a section's bytes (hex)
      text=NAME:TEXT            replace a section's bytes (text)
      repeat=NAME:BYTE:COUNT    a section of COUNT copies of one byte
      nan=NAME:INDEX            float32 element INDEX of a section becomes NaN
      scale=NAME:FACTOR         every float32 element of a section times FACTOR (float32)
      f64=NAME:INDEX:VALUE      float64 element INDEX of a section becomes VALUE
      i64=NAME:INDEX:VALUE      int64 element INDEX of a section becomes VALUE
      dup=NAME                  the section appears twice
      featname=INDEX:TEXT       feature name INDEX (0-based) of the `features` list becomes TEXT
      featlong=INDEX:COUNT      ... becomes COUNT letters x
      u32at=NAME:OFFSET:VALUE   the little-endian 32-bit word at byte OFFSET of a section
      hstep=VALUE               the header's step (u64)
      hraw=VALUE                the header's uncompressed payload size (u64)
      slen=NAME:VALUE           the section's length field (u64) lies (CRC still valid)
"""
import struct
import sys
import zlib

MAGIC = b"WCKPT\r\n\x1a"


def header_crc(h, body):
    """The CRC-32 a header stores: over the header without its own CRC field, then the body."""
    return zlib.crc32(body, zlib.crc32(bytes(h[44:64]), zlib.crc32(bytes(h[:40]))))


def read(path, check=False):
    """The checkpoint at path; with check, as a resume would trust it: a ValueError unless its
    compressed size and CRC-32 are those the header states."""
    data = open(path, "rb").read()
    h = data[:64]
    if h[:8] != MAGIC:
        raise ValueError("%s: not a checkpoint" % path)
    version, bom, step, raw_size, zsize, crc = struct.unpack_from("<IIQQQI", h, 8)
    if check and (zsize != len(data) - 64 or header_crc(h, data[64:]) != crc):
        raise ValueError("%s: size or CRC-32 is not the header's" % path)
    raw = zlib.decompress(data[64:])
    sections, off = [], 0
    while off < len(raw):
        (n,) = struct.unpack_from("<I", raw, off)
        name = raw[off + 4 : off + 4 + n].decode()
        (m,) = struct.unpack_from("<Q", raw, off + 4 + n)
        start = off + 12 + n
        sections.append([name, raw[start : start + m], None])
        off = start + m
    return {"version": version, "bom": bom, "step": step, "raw_size": None, "sections": sections}


def write(ck, path):
    raw = b""
    for name, body, lie in ck["sections"]:
        nb = name.encode()
        raw += struct.pack("<I", len(nb)) + nb + struct.pack("<Q", len(body) if lie is None else lie)
        raw += body
    z = zlib.compress(raw, 1)
    raw_size = len(raw) if ck["raw_size"] is None else ck["raw_size"]
    h = bytearray(64)
    h[:8] = MAGIC
    struct.pack_into("<IIQQQ", h, 8, ck["version"], ck["bom"], ck["step"], raw_size, len(z))
    struct.pack_into("<I", h, 40, header_crc(h, z))
    open(path, "wb").write(bytes(h) + z)


def section(ck, name):
    for s in ck["sections"]:
        if s[0] == name:
            return s
    raise KeyError(name)


def apply(ck, op):
    kind, _, arg = op.partition("=")
    if kind == "drop":
        ck["sections"] = [s for s in ck["sections"] if s[0] != arg]
    elif kind == "set":
        name, hexs = arg.split(":", 1)
        section(ck, name)[1] = bytes.fromhex(hexs)
    elif kind == "text":
        name, text = arg.split(":", 1)
        section(ck, name)[1] = text.encode()
    elif kind == "repeat":
        name, byte, count = arg.split(":")
        section(ck, name)[1] = bytes([int(byte, 0)]) * int(count)
    elif kind == "nan":
        name, index = arg.split(":")
        s = section(ck, name)
        b = bytearray(s[1])
        struct.pack_into("<f", b, 4 * int(index), float("nan"))
        s[1] = bytes(b)
    elif kind == "scale":
        name, factor = arg.split(":")
        s = section(ck, name)
        n = len(s[1]) // 4
        v = struct.unpack("<%df" % n, s[1])
        f = struct.unpack("<f", struct.pack("<f", float(factor)))[0]
        s[1] = struct.pack("<%df" % n, *(struct.unpack("<f", struct.pack("<f", x * f))[0] for x in v))
    elif kind in ("f64", "i64"):
        name, index, value = arg.split(":")
        s = section(ck, name)
        b = bytearray(s[1])
        if kind == "f64":
            struct.pack_into("<d", b, 8 * int(index), float(value))
        else:
            struct.pack_into("<q", b, 8 * int(index), int(value))
        s[1] = bytes(b)
    elif kind == "featname":
        index, text = arg.split(":", 1)
        s = section(ck, "features")
        names = s[1].decode().split(",")
        names[int(index)] = text
        s[1] = ",".join(names).encode()
    elif kind == "featlong":
        index, count = arg.split(":")
        s = section(ck, "features")
        names = s[1].decode().split(",")
        names[int(index)] = "x" * int(count)
        s[1] = ",".join(names).encode()
    elif kind == "u32at":
        name, offset, value = arg.split(":")
        s = section(ck, name)
        b = bytearray(s[1])
        struct.pack_into("<i", b, int(offset), int(value))
        s[1] = bytes(b)
    elif kind == "dup":
        s = section(ck, arg)
        ck["sections"].append(list(s))
    elif kind == "hstep":
        ck["step"] = int(arg) % (1 << 64)
    elif kind == "hraw":
        ck["raw_size"] = int(arg)
    elif kind == "slen":
        name, value = arg.split(":")
        section(ck, name)[2] = int(value)
    else:
        raise SystemExit("unknown op " + op)


def main():
    if sys.argv[1] == "show":
        ck = read(sys.argv[2])
        print("step", ck["step"], "version", ck["version"])
        for name, body, _ in ck["sections"]:
            print(name, len(body))
    elif sys.argv[1] == "edit":
        ck = read(sys.argv[2])
        for op in sys.argv[4:]:
            apply(ck, op)
        write(ck, sys.argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
