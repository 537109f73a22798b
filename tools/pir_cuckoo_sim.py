#!/usr/bin/env python3
"""Replays how Apple's PIRProcessDatabase places the rows of a KeywordDatabase file in its
cuckoo tables, and counts the rows it loses.

A re-implementation, step for step, of swift-homomorphic-encryption release/1.1:
KeywordDatabase (sharding: SHA-256 of the keyword, first 8 bytes little-endian, modulo the
shard count), CuckooTable.init/insert/insertLoop/expand and CuckooBucket.canInsert/swapIndices,
HashBucket sizes (1 byte of slot count, 8 of keyword hash, 2 of value size, the value),
HashKeyword.hashIndices, and PIRProcessDatabase's default maxSerializedBucketSize. It keeps
Apple's behaviour where insertLoop finds no bucket that can take a row even by swapping one
out: the table expands and that row is not inserted again (it is lost, silently). Row order
within a shard (a Swift Dictionary's) and the eviction choices (SystemRandomNumberGenerator)
are random there; here they come from --seed.

  python3 tools/pir_cuckoo_sim.py out/identity.binpb --max-bucket 4096 --runs 4
  python3 tools/pir_cuckoo_sim.py out/identity.binpb          # PIRProcessDatabase's default size

Prints per run the rows lost (shard, keyword, value size) and a summary line. Exit 0 when no
run lost a row, 1 otherwise. docs/LIVE-CALLER-ID.md explains what to do with the figures.
"""
import argparse
import hashlib
import math
import random
import struct
import sys


def varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def keyword_database_rows(path):
    """(keyword, value) of every `rows` field (1) of a KeywordDatabase message."""
    data = open(path, 'rb').read()
    rows, i = [], 0
    while i < len(data):
        key, i = varint(data, i)
        length, i = varint(data, i)
        body, i = data[i:i + length], i + length
        if key != (1 << 3 | 2):
            continue
        keyword = value = b''
        j = 0
        while j < len(body):
            k, j = varint(body, j)
            n, j = varint(body, j)
            if k == (1 << 3 | 2):
                keyword = body[j:j + n]
            elif k == (2 << 3 | 2):
                value = body[j:j + n]
            j += n
        rows.append((keyword, value))
    return rows


def keyword_hash(keyword):
    return struct.unpack('<Q', hashlib.sha256(keyword).digest()[:8])[0]


def index_from_hash(h, bucket_count, counter):
    digest = hashlib.sha256(struct.pack('>Q', h) + bytes([counter])).digest()
    return struct.unpack('<Q', digest[:8])[0] % bucket_count


def hash_indices(h, bucket_count, count=2, max_retries=10):
    candidates = []
    for _ in range(count):
        counter = 0
        index = index_from_hash(h, bucket_count, counter)
        while index in candidates and counter < max_retries:
            counter += 1
            index = index_from_hash(h, bucket_count, counter)
        candidates.append(index)
    return candidates


def entry_size(value_size):
    return 8 + 2 + value_size


class Failed(Exception):
    """PIRProcessDatabase stops with an error (a fixed-size table that would have to grow)."""


class CuckooTable:
    """CuckooTable with allowExpansion, multipleTables (2 tables), HashBucket.maxSlotCount."""

    def __init__(self, rows, max_bucket, rng, fixed=None, hash_count=2, max_evictions=100, expansion=1.1, load=0.9, slots=255):
        self.max_bucket, self.rng, self.hash_count, self.fixed = max_bucket, rng, hash_count, fixed
        self.max_evictions, self.expansion, self.slots = max_evictions, expansion, slots
        if fixed:
            count = fixed
        else:
            total = 1 + sum(entry_size(len(v)) for _, v in rows)
            minimum = -(-total // max_bucket)
            count = math.ceil(minimum / load)
        self.new_buckets(count + (-count) % hash_count)
        for kv in rows:
            self.insert(kv)

    def new_buckets(self, count):
        self.buckets = [[] for _ in range(count)]
        self.sizes = [1] * count   # serialized size of each bucket (the slot-count byte)

    def indices(self, keyword):
        per_table = len(self.buckets) // self.hash_count
        h = keyword_hash(keyword)
        return [t * per_table + i for t, i in enumerate(hash_indices(h, per_table, self.hash_count))]

    def insert(self, kv):
        if 1 + entry_size(len(kv[1])) > self.max_bucket:
            raise ValueError(f'value of {len(kv[1])} bytes is larger than maxSerializedBucketSize')
        self.insert_loop(kv, self.max_evictions)

    def insert_loop(self, kv, remaining):
        if remaining == 0:
            if self.fixed:
                raise Failed('Unable to insert value with keyword (eviction limit)')
            self.expand()
            self.insert(kv)
            # Apple's code goes on below; the keyword is found in the table and it returns.
        keyword, value = kv
        indices = self.indices(keyword)
        for b in indices:
            if any(k == keyword for k, _ in self.buckets[b]):
                return
        size = entry_size(len(value))
        for b in indices:
            if len(self.buckets[b]) < self.slots and self.sizes[b] + size <= self.max_bucket:
                self.buckets[b].append(kv)
                self.sizes[b] += size
                return
        choices = [(b, j) for b in indices for j, (_, v) in enumerate(self.buckets[b])
                   if self.sizes[b] - entry_size(len(v)) + size <= self.max_bucket]
        if choices:
            b, j = self.rng.choice(choices)
            evicted = self.buckets[b][j]
            self.buckets[b][j] = kv
            self.sizes[b] += size - entry_size(len(evicted[1]))
            self.insert_loop(evicted, remaining - 1)
        else:
            self.expand()   # and return: this row is not inserted again

    def expand(self):
        if self.fixed:
            raise Failed('Needed to expand a Cuckoo table that doesn\'t allow expansion')
        old = self.buckets
        count = math.ceil(len(old) * self.expansion)
        self.new_buckets(count + (-count) % self.hash_count)
        for bucket in old:
            for kv in bucket:
                self.insert(kv)

    def keywords(self):
        return {k for bucket in self.buckets for k, _ in bucket}


def default_max_bucket(max_value, bytes_per_plaintext):
    single = 1 + entry_size(max_value)
    if single >= bytes_per_plaintext // 2:
        return -(-single // bytes_per_plaintext) * bytes_per_plaintext
    return bytes_per_plaintext // 2


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('database', help='a KeywordDatabase file (identity.binpb, block.binpb)')
    parser.add_argument('--max-bucket', type=int, help='maxSerializedBucketSize (default: what PIRProcessDatabase derives)')
    parser.add_argument('--bytes-per-plaintext', type=int, default=2048,
                        help='of the rlweParameters, for the default bucket size (2048: n_4096_logq_27_28_28_logt_5)')
    parser.add_argument('--entries-per-shard', type=int, default=5000, help='sharding.entryCountPerShard (default 5000)')
    parser.add_argument('--bucket-count', type=int,
                        help='bucketCount {"fixedSize": {"bucketCount": N}} (default: allowExpansion, as PIRProcessDatabase)')
    parser.add_argument('--fixed-load', type=float,
                        help='fixedSize with the bucket count that fills the largest shard to this load (0.75: what lookup export writes)')
    parser.add_argument('--runs', type=int, default=1)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()
    sys.setrecursionlimit(1_000_000)   # eviction chains and expansions recurse, as in Swift

    rows = keyword_database_rows(args.database)
    if not rows:
        print('no rows')
        return 0
    max_value = max(len(v) for _, v in rows)
    max_bucket = args.max_bucket or default_max_bucket(max_value, args.bytes_per_plaintext)
    shard_count = max(len(rows) // args.entries_per_shard, 1)
    shards = [[] for _ in range(shard_count)]
    for kv in rows:
        shards[keyword_hash(kv[0]) % shard_count].append(kv)
    largest_shard = max(1 + sum(entry_size(len(v)) for _, v in shard) for shard in shards)
    if args.fixed_load:
        count = math.ceil(largest_shard / (args.fixed_load * max_bucket))
        args.bucket_count = count + count % 2
    print(f'{len(rows)} rows, largest value {max_value} bytes, {shard_count} shards (largest {largest_shard} bytes), '
          f'maxSerializedBucketSize {max_bucket}, bucketCount {args.bucket_count or "allowExpansion"}'
          + (f' (load {largest_shard / (args.bucket_count * max_bucket):.2f} in the largest shard)' if args.bucket_count else ''))
    rng = random.Random(args.seed)
    lost_runs = 0
    for run in range(args.runs):
        lost = []
        failed = False
        for shard_id, shard in enumerate(shards):
            shard = shard[:]
            rng.shuffle(shard)
            try:
                placed = CuckooTable(shard, max_bucket, rng, fixed=args.bucket_count).keywords()
            except Failed as error:
                print(f'run {run + 1}: shard {shard_id}: PIRProcessDatabase stops with an error: {error}')
                failed = True
                lost_runs += 1
                break
            lost += [(shard_id, k, len(v)) for k, v in shard if k not in placed]
        for shard_id, keyword, size in lost:
            print(f'run {run + 1}: shard {shard_id}: lost {keyword.decode(errors="replace")} ({size}-byte value)')
        if not failed:
            print(f'run {run + 1}: {len(lost)} of {len(rows)} rows lost')
        lost_runs += bool(lost)
    return 1 if lost_runs else 0


if __name__ == '__main__':
    sys.exit(main())
