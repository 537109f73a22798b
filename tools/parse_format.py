#!/usr/bin/env python3
# Usage: python3 tools/parse_format.py FILE.cid [--layout] [--ranges]  — decodes a format 2.0, 3.0 or 3.1 file from docs/FORMAT.md
# alone and prints `lookup dump`'s lines; with --ranges, the ranges of section kind 12 instead (first, last, label, category).
# 3.1 (cold labels as LZ4 groups, sections 13 and 14) is decoded by the LZ4 block decoder below, not by the lz4 module.
import ctypes, ctypes.util, struct, sys

MAX_NUMBER = 999_999_999_999_999
_xx = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_xx.XXH3_64bits.restype = ctypes.c_uint64
_xx.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3(b):
    return _xx.XXH3_64bits(bytes(b), len(b))


class Bad(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Bad(what)


def u16(b, o): return struct.unpack_from("<H", b, o)[0]
def u32(b, o): return struct.unpack_from("<I", b, o)[0]
def u64(b, o): return struct.unpack_from("<Q", b, o)[0]


def lsb_field(b, bit, width):
    """Field of `width` bits at stream bit `bit`, LSB-first (§1)."""
    v = 0
    for k in range(width):
        p = bit + k
        v |= ((b[p >> 3] >> (p & 7)) & 1) << k
    return v


def msb_bit(b, bit):
    """Stream bit `bit` of an MSB-first stream (§1)."""
    return (b[bit >> 3] >> (7 - (bit & 7))) & 1


def decode_labels(value_count, hot_count, hot_off, hot, st, cold_index, cold):
    """The labels of a label table (§5.7–5.11; the parts P3–P7 of §5.12): hot raw, cold coded."""
    check(len(hot_off) == 4 * (hot_count + 1) and u32(hot_off, 0) == 0 and u32(hot_off, 4 * hot_count) == len(hot), "hot offsets")
    nsym = st[0]
    lens = list(st[1:1 + nsym])
    check(all(1 <= l <= 8 for l in lens) and len(st) == 1 + nsym + sum(lens), "symbol table")
    symbols, q = [], 1 + nsym
    for l in lens:
        symbols.append(st[q:q + l])
        q += l
    groups = (value_count - hot_count + 7) >> 3
    check(len(cold_index) == 4 * (groups + 1) and u32(cold_index, 0) == 0 and u32(cold_index, 4 * groups) == len(cold), "cold index")
    labels = hot_labels(hot_count, hot_off, hot)
    for g in range(groups):
        at, end = u32(cold_index, 4 * g), u32(cold_index, 4 * g + 4)
        check(at <= end <= len(cold), "cold group")
        for k in range(min(8, value_count - hot_count - 8 * g)):
            ln, shift = 0, 0
            while True:
                check(at < end and shift < 21, "cold length")
                byte = cold[at]
                at += 1
                ln |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            check(ln <= end - at, "cold label past its group")
            codes, at, out, i = cold[at:at + ln], at + ln, bytearray(), 0
            while i < len(codes):
                if codes[i] < nsym:
                    out += symbols[codes[i]]
                    i += 1
                else:
                    check(codes[i] == 255 and i + 1 < len(codes), "bad label code")
                    out.append(codes[i + 1])
                    i += 2
            labels.append(bytes(out))
        check(at == end, "unused bytes in a cold group")
    return labels


def lz4_block(src, dictionary, size):
    """One LZ4 block (lz4 doc/lz4_Block_format.md) that must decode to exactly `size` bytes; its
    matches may reach back past the output's start into `dictionary` (the bytes just before it)."""
    buf, base, i, n = bytearray(dictionary), len(dictionary), 0, len(src)
    limit = base + size

    def length(nibble):
        nonlocal i
        if nibble == 15:
            while True:
                check(i < n, "LZ4 block ends inside a sequence")
                nibble += src[i]
                i += 1
                if src[i - 1] != 255:
                    break
        return nibble

    while True:
        check(i < n, "LZ4 block ends inside a sequence")  # also: no final literals-only sequence
        token = src[i]
        i += 1
        lit = length(token >> 4)
        check(lit <= n - i, "LZ4 block ends inside a sequence")
        check(lit <= limit - len(buf), "LZ4 block decodes past its decodedLength")
        buf += src[i:i + lit]
        i += lit
        if i == n:  # the last sequence: literals only
            break
        check(i + 2 <= n, "LZ4 block ends inside a sequence")
        offset = src[i] | src[i + 1] << 8
        i += 2
        check(offset != 0, "LZ4 match offset 0")
        match = length(token & 15) + 4
        at = len(buf) - offset
        check(at >= 0, "LZ4 match reaches before the dictionary")
        check(match <= limit - len(buf), "LZ4 block decodes past its decodedLength")
        if offset >= match:
            buf += buf[at:at + match]
        else:  # overlapping: the last `offset` bytes repeat
            buf += (bytes(buf[at:]) * (match // offset + 1))[:match]
    check(len(buf) == limit, "LZ4 block decodes to less than its decodedLength")
    return bytes(buf[base:])


def hot_labels(hot_count, hot_off, hot):
    """The raw labels of values 0 … hotCount − 1 (§5.7, §5.8)."""
    labels = []
    for v in range(hot_count):
        a, e = u32(hot_off, 4 * v), u32(hot_off, 4 * v + 4)
        check(a <= e <= len(hot), "hot label offsets")
        labels.append(hot[a:e])
    return labels


def decode_lz4_labels(value_count, hot_count, hot_off, hot, cold_index, cold, layout=False):
    """The labels of a 3.1 file (/tmp/spec/lz4-labels.md): hot raw (§5.7, §5.8), cold in LZ4
    groups (kind 13: index, kind 14: groups) compressed against the hot labels' last 64 KiB."""
    check(len(hot_off) == 4 * (hot_count + 1) and u32(hot_off, 0) == 0 and u32(hot_off, 4 * hot_count) == len(hot), "hot offsets")
    cold_count = value_count - hot_count
    check(len(cold_index) >= 8, "LZ4 cold label index header")
    singles, shift = u32(cold_index, 0), cold_index[4]
    check(shift <= 6 and not any(cold_index[5:8]), "LZ4 cold label index header")
    check(singles <= cold_count, "LZ4 cold singles")
    size = 1 << shift
    groups = singles + (cold_count - singles + size - 1) // size
    check(len(cold_index) == 8 + 4 * (groups + 1) and u32(cold_index, 8) == 0
          and u32(cold_index, 8 + 4 * groups) == len(cold), "LZ4 cold label index")
    if layout:
        print(f"lz4 cold labels: singles {singles} groupShift {shift} groups {groups} bytes {len(cold)}")
    dictionary = hot[max(0, len(hot) - 65536):]
    labels = hot_labels(hot_count, hot_off, hot)
    for g in range(groups):
        at, end = u32(cold_index, 8 + 4 * g), u32(cold_index, 12 + 4 * g)
        check(at <= end <= len(cold), "LZ4 cold group")
        n = 1 if g < singles else min(size, cold_count - singles - size * (g - singles))
        decoded_length, body = varint(cold, at, end, 3, "LZ4 decodedLength")
        check(body == at + 1 or cold[body - 1] != 0, "LZ4 decodedLength not minimal")
        at = body
        check(decoded_length <= 65536, "LZ4 decodedLength too large")
        if decoded_length == 0:
            check(at == end, "LZ4 group of decodedLength 0 has a block")
            decoded = b""
        else:
            decoded = lz4_block(cold[at:end], dictionary, decoded_length)
        p = 0
        for _ in range(n - 1):
            ln, p = varint(decoded, p, len(decoded), 3, "LZ4 label length")
            check(ln <= 65535 and ln <= len(decoded) - p, "LZ4 label length")
            labels.append(decoded[p:p + ln])
            p += ln
        check(len(decoded) - p <= 65535, "LZ4 last label length")
        labels.append(decoded[p:])
    check(len(labels) == value_count, "LZ4 label count")
    return labels


def parse(path, layout=False, ranges=False):
    f = open(path, "rb").read()
    size = len(f)
    # §3 header
    check(f[0:8] == bytes([0x89, 0x43, 0x49, 0x44, 0x42, 0x0D, 0x0A, 0x1A]), "magic")
    major, minor = u16(f, 8), u16(f, 10)
    # §9: 3 = key codec 2 in use; a minor this decoder does not know is refused like a newer major;
    # 3.1 = cold labels in LZ4 groups (sections 13 and 14 instead of 9, 10 and 11).
    check((major, minor) in ((2, 0), (3, 0), (3, 1)), f"unsupported version {major}.{minor}")
    known = set(range(1, 13)) if minor == 0 else set(range(1, 9)) | {12, 13, 14}  # 3.1: 9-11 ignored
    required = set(range(1, 12)) if minor == 0 else set(range(1, 9)) | {13, 14}
    check(size >= 96, "too short")
    check(xxh3(f[0:56]) == u64(f, 56), "header checksum")
    check(u32(f, 12) == 64 and u64(f, 16) == size, "header size / file size")
    entries, block_count, value_count, hot_count = u64(f, 24), u32(f, 32), u32(f, 36), u32(f, 40)
    sync_shift, summary_shift, block_size, table_offset = f[44], f[45], u16(f, 46), u64(f, 48)
    check(1 <= block_size <= 1024 and sync_shift <= 10 and summary_shift <= 6, "header ranges")
    check(block_count <= size // 20 and block_count <= entries <= block_count * block_size, "counts")
    check(hot_count <= value_count <= entries and (entries == 0) == (value_count == 0), "value counts")
    # §4 footer and section table
    footer = size - 32
    check(f[footer + 24:footer + 32] == b"CIDB-END", "footer magic")
    check(u64(f, footer) == size and u64(f, footer + 16) == entries, "footer")
    check(64 <= table_offset <= footer and (footer - table_offset) % 32 == 0, "table offset")
    n_sections = (footer - table_offset) // 32
    check(1 <= n_sections <= 64, "section count")
    check(xxh3(f[table_offset:footer]) == u64(f, footer + 8), "table checksum")
    sec = {}
    spans = []
    for i in range(n_sections):
        e = table_offset + 32 * i
        kind, res, off, length, cs = u32(f, e), u32(f, e + 4), u64(f, e + 8), u64(f, e + 16), u64(f, e + 24)
        check(res == 0 and 64 <= off <= table_offset and length <= table_offset - off, "section bounds")
        check(xxh3(f[off:off + length]) == cs, f"section {kind} checksum")  # verify-time check
        if kind in known:
            check(kind not in sec, "duplicate kind")
            sec[kind] = f[off:off + length]
        spans.append((off, length, kind))
    spans.sort()
    covered = 64
    for off, length, kind in spans:
        check(covered <= off and not any(f[covered:off]), "overlap or non-zero padding")
        covered = off + length
    check(not any(f[covered:table_offset]), "non-zero padding before the table")
    check(all(k in sec for k in required), "missing section")
    if layout:
        print(f"header: entries {entries} blocks {block_count} values {value_count} hot {hot_count} "
              f"syncShift {sync_shift} summaryShift {summary_shift} blockSize {block_size} table at {table_offset}")
        for off, length, kind in sorted(spans):
            print(f"section kind {kind}: offset {off} length {length}")
    # §5.1 categories
    c = sec[1]
    ncat = u32(c, 0)
    check(1 <= ncat <= 256, "category count")
    cats, p = [], 4
    for _ in range(ncat):
        action, ln = c[p], c[p + 1]
        name = c[p + 2:p + 2 + ln]
        check(action in (0, 1) and 1 <= ln <= 64 and len(name) == ln, "category record")
        check(all(ch in b"abcdefghijklmnopqrstuvwxyz0123456789-_" for ch in name), "category name")
        cats.append(name.decode())
        p += 2 + ln
    check(p == len(c) and len(set(cats)) == len(cats), "categories")
    # §5 sizes
    summary, index, blocks = sec[2], sec[3], sec[4]
    check(len(summary) == 8 * ((block_count + (1 << summary_shift) - 1) >> summary_shift), "summary size")
    check(len(index) == 12 * (block_count + 1), "index size")
    check(len(blocks) >= 8 and not any(blocks[-8:]), "record padding")
    check(u32(index, 12 * block_count + 8) == len(blocks) - 8, "sentinel")
    check(block_count == 0 or u32(index, 8) == 0, "first record offset")
    # §5.5 canonical code
    counts = [u32(sec[5], 4 * L) for L in range(27)]
    check(len(sec[5]) == 108 and counts[0] == 0, "code lengths")
    check(sum(counts) == (0 if value_count <= 1 else value_count), "code total")
    check(sum(counts[L] << (26 - L) for L in range(1, 27)) <= 1 << 26, "Kraft")
    first_code, first_id, code = [0] * 27, [0] * 27, 0
    ident = 0
    for L in range(1, 27):
        code <<= 1
        first_code[L], first_id[L] = code, ident
        code += counts[L]
        ident += counts[L]

    def decode_value(stream, bit, nbits):
        """One code at stream bit `bit`: (id, length)."""
        if value_count <= 1:
            return 0, 0
        c = 0
        for L in range(1, 27):
            check(bit + L <= nbits, "value code runs past the record")
            c = (c << 1) | msb_bit(stream, bit + L - 1)
            if c - first_code[L] < counts[L]:
                return first_id[L] + c - first_code[L], L
        raise Bad("no valid code")

    # §5.6 – §5.11 labels
    vcat = sec[6]
    check(len(vcat) == value_count, "value categories size")
    hot_off, hot = sec[7], sec[8]
    if minor == 1:
        labels = decode_lz4_labels(value_count, hot_count, hot_off, hot, sec[13], sec[14], layout)
    else:
        labels = decode_labels(value_count, hot_count, hot_off, hot, sec[9], sec[10], sec[11])
    for v, lab in enumerate(labels):
        check(len(lab) <= 65535 and not any(b < 0x20 or b == 0x7F for b in lab), "label text")
        lab.decode("utf-8")
        check(vcat[v] < ncat, "category code")
    # §5.3/§5.4 block index and records
    out_lines, previous, total = [], 0, 0
    for b in range(block_count):
        first = u64(index, 12 * b)
        start, end = u32(index, 12 * b + 8), u32(index, 12 * b + 20)
        check(b % (1 << summary_shift) != 0 or u64(summary, 8 * (b >> summary_shift)) == first, "summary")
        check(start < end and end - start >= 8 and end <= len(blocks) - 8, "record bounds")
        r = blocks[start:end]
        n, l, codec, upper_words, lower_bytes = u16(r, 0), r[2], r[3], u16(r, 4), u16(r, 6)
        m = n - 1
        check(1 <= n <= block_size, "entries in record")
        nsync = m >> sync_shift
        syncs = [u16(r, 8 + 2 * k) for k in range(nsync)]
        bitmap_start = 8 + 2 * nsync
        bitmap_words = (m + 63) // 64 if codec == 2 else 0
        upper_start = bitmap_start + 8 * bitmap_words
        lower_start = upper_start + 8 * upper_words
        value_start = lower_start + lower_bytes
        check(value_start <= len(r), "record fields past its end")
        keys = [first]
        if codec == 1:
            check(l == 0 and upper_words == 0 and lower_bytes == 0, "run header")
            keys += [first + j + 1 for j in range(m)]
        else:
            # codec 0: Elias-Fano over every x_j; codec 2 (major 3 only): bitmap bit j set when
            # key j + 1 is key j + 1, Elias-Fano over the x_j of the clear bits.
            check(codec == 0 or (codec == 2 and major == 3 and m > 0), "key codec")
            gap_one = [(r[bitmap_start + (j >> 3)] >> (j & 7)) & 1 for j in range(m)] if codec == 2 else [0] * m
            check(codec != 2 or all(r[bitmap_start + (j >> 3)] >> (j & 7) & 1 == 0
                                    for j in range(m, 64 * bitmap_words)), "bitmap padding")  # verify
            e = m - sum(gap_one)
            check(l <= 56 and 8 * lower_bytes >= e * l and 64 * upper_words >= e, "EF header")
            upper = r[upper_start:lower_start]
            lower = r[lower_start:value_start]
            ones = [p for p in range(64 * upper_words) if (upper[p >> 3] >> (p & 7)) & 1]
            check(len(ones) == e, "upper bits")  # verify: exactly e ones
            elements = iter(first + (((p - i) << l) | lsb_field(lower, i * l, l)) for i, p in enumerate(ones))
            for j in range(m):
                keys.append(keys[-1] + 1 if gap_one[j] else next(elements))
            if codec == 2:  # verify: the bitmap marks exactly the gap-1 keys
                check(all((keys[j + 1] - keys[j] == 1) == bool(gap_one[j]) for j in range(m)), "bitmap")
        for k in keys:
            check(previous < k <= MAX_NUMBER, "keys not ascending")
            previous = k
        stream = r[value_start:]
        nbits, bit, ids = 8 * len(stream), 0, []
        for i in range(n):
            if i and i % (1 << sync_shift) == 0:
                check(syncs[i // (1 << sync_shift) - 1] == bit, "sync point")
            vid, L = decode_value(stream, bit, nbits)
            ids.append(vid)
            bit += L
        check((bit + 7) // 8 == len(stream), "value stream length")  # verify: canonical
        if layout:
            print(f"block {b}: first {first} record {start}..{end} n {n} l {l} codec {codec} "
                  f"upperWords {upper_words} lowerBytes {lower_bytes} sync {syncs} ids {ids}")
        for k, vid in zip(keys, ids):
            lab = labels[vid].decode("utf-8")
            out_lines.append(f"{k}\t{lab}\t{cats[vcat[vid]]}")
        total += n
    check(total == entries, "entry count")
    if ranges:
        keys = [int(line.split("\t", 1)[0]) for line in out_lines]
        return parse_ranges(sec.get(12), cats, keys, layout)
    return out_lines


def varint(b, at, end, most, what="varint"):
    """Unsigned LEB128 at `at` (§5.11), at most `most` bytes, ending before `end`: (value, next)."""
    v = 0
    for k in range(most):
        check(at + k < end, f"{what} past the record" if what == "varint" else f"{what} past its end")
        v |= (b[at + k] & 0x7F) << (7 * k)
        if b[at + k] < 0x80:
            return v, at + k + 1
    raise Bad(f"{what} too long")


def decimal(code):
    """The count of decimal code `(m - 1) << 4 | e`: m × 10^e (§5.12), at most maxNumber + 1."""
    v = ((code >> 4) + 1) * 10 ** (code & 15)
    check(v <= MAX_NUMBER + 1, "decimal code too large")
    return v


def parse_ranges(s, cats, entry_keys, layout):
    """§5.12: the ranges section (None: the file has none) as (first, last, label, category) lines."""
    if s is None:
        return []
    check(len(s) >= 88, "ranges header")
    range_count, value_count, hot_count, block_size, key_bytes = u32(s, 0), u32(s, 4), u32(s, 8), u16(s, 12), u16(s, 14)
    part_count = u32(s, 52)
    check(key_bytes in (4, 8) and 1 <= block_size <= 1024, "ranges block size or key width")
    spans = [decimal(u16(s, 56 + 2 * i)) for i in range(16)]
    parts, at = [], 88
    for i in range(9):
        length = u32(s, 16 + 4 * i)
        check(at + length <= len(s), "ranges part past the section")
        parts.append(s[at:at + length])
        at += length
    check(at == len(s), "ranges parts do not end at the section's end")
    index, records, vcat, value_parts = parts[0], parts[1], parts[2], parts[8]
    check(range_count <= len(records), "more ranges than record bytes")
    check(hot_count <= part_count and value_count <= range_count, "ranges counts")
    check((value_count == 0) == (range_count == 0) == (part_count == 0), "ranges counts")
    block_count = (range_count + block_size - 1) // block_size
    group_count = (block_count + 15) // 16
    check(len(index) == 12 * (group_count + 1) + (key_bytes + 2) * block_count, "ranges index size")
    check(len(vcat) == value_count, "ranges value categories size")
    id_bytes = 2 if part_count <= 1 << 16 else 4
    check(len(value_parts) == 2 * id_bytes * value_count, "ranges value parts size")
    check(u32(index, 12 * group_count + 8) == len(records) and (group_count == 0 or u32(index, 8) == 0), "ranges index ends")
    part_labels = decode_labels(part_count, hot_count, parts[3], parts[4], parts[5], parts[6], parts[7])
    labels = []
    for v in range(value_count):
        unpack = u16 if id_bytes == 2 else u32
        a, b = unpack(value_parts, 2 * id_bytes * v), unpack(value_parts, 2 * id_bytes * v + id_bytes)
        check(a < part_count and b < part_count and vcat[v] < len(cats), "range value")
        label = part_labels[a] + part_labels[b]
        check(len(label) <= 65535, "range label length")
        labels.append(label.decode("utf-8"))
    out, previous_last, start, next_entry = [], -1, 0, 0
    blocks = index[12 * (group_count + 1):]
    for b in range(block_count):
        g = b // 16
        group_first, group_offset = u64(index, 12 * g), u32(index, 12 * g + 8)
        e = (key_bytes + 2) * b
        delta = u32(blocks, e) if key_bytes == 4 else u64(blocks, e)
        field = u16(blocks, e + key_bytes)
        length, inside_bit = field & 0x7FFF, field >> 15
        if b % 16 == 0:
            check(group_offset == start and delta == 0, "range group start")
        first_key = group_first + delta
        check(previous_last < first_key <= MAX_NUMBER, "range blocks out of order")
        end = start + length
        check(start < end <= len(records), "range record bounds")
        at, upcoming, recent, inside = start, first_key, [], False
        n = block_size if b < block_count - 1 else range_count - b * block_size
        for i in range(n):
            head, at = varint(records, at, end, 9)
            k, symbol = head & 7, head >> 3
            gap, mode = k // 3, k % 3
            span = spans[symbol] if symbol < 16 else decimal(symbol - 16)
            check(i > 0 or gap == 0, "a gap before a block's first range")
            first = upcoming + (1 if gap == 1 else 0)
            if gap == 2:
                code, at = varint(records, at, end, 9)
                first = upcoming + decimal(code)
            if mode == 0:
                value, at = varint(records, at, end, 9)
                check(value < value_count, "range value id")
            else:
                check(len(recent) >= mode, "range names a value its block has not used")
                value = recent[mode - 1]
            if not recent or recent[0] != value:
                recent = [value] + recent[:1]
            last = first + span - 1
            check(first <= MAX_NUMBER and last <= MAX_NUMBER, "range beyond the largest number")
            while next_entry < len(entry_keys) and entry_keys[next_entry] < first:
                next_entry += 1
            if next_entry < len(entry_keys) and entry_keys[next_entry] <= last:
                inside = True
            out.append(f"{first}\t{last}\t{labels[value]}\t{cats[vcat[value]]}")
            upcoming, previous_last = last + 1, last
        check(at == end, "unused bytes in a range record")
        check(inside_bit == inside, "entries-inside bit")
        if layout:
            print(f"range block {b}: first {first_key} record {start}..{end} ranges {n} entries-inside {inside_bit}")
        start = end
    check(start == len(records), "range records end")
    return out


if __name__ == "__main__":
    try:
        for line in parse(sys.argv[1], "--layout" in sys.argv[2:], "--ranges" in sys.argv[2:]):
            print(line)
    except Bad as e:
        sys.exit(f"{sys.argv[1]}: {'' if str(e).startswith('unsupported') else 'damaged: '}{e}")
