// CLMDB: Debian's liblmdb for the benchmark harness (never part of the product).
#ifndef CLMDB_H
#define CLMDB_H
#include <lmdb.h>
#endif
