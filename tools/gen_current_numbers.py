#!/usr/bin/env python3
"""Valid phone numbers of today's libphonenumber, as people type them: a hold-out for the
pipeline's metadata, which is Debian's libphonenumber (8.12.57, 2022).

For each region, fixed-line and mobile numbers: a prefix of one of the type's example numbers
(so that tries land in the country's ranges) or a random first digit, completed with random
digits to one of the type's possible lengths, kept when the installed `phonenumbers` (the newest:
`pip install phonenumbers`) calls it a valid number of the region. Written in national format.

Usage:
    python3 tools/gen_current_numbers.py --seed 5 --per-region 12 -o Tests/CallerIDTests/Fixtures/current-numbers.tsv
    python3 tools/gen_current_numbers.py --seed 7 --per-region 3000 --regions NG -o ng.tsv

Output: TSV with a header: region, text (national format), e164 (digits), and the version of
the metadata that judged them on the header's comment line.
"""
import argparse, random, sys

import phonenumbers
from phonenumbers import PhoneNumberFormat as F, PhoneNumberType as T

TYPES = [T.FIXED_LINE, T.MOBILE]


def numbers(region, per, rng):
    md = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if md is None:
        return
    kinds = []
    for t in TYPES:
        desc = md.fixed_line if t == T.FIXED_LINE else md.mobile
        ex = phonenumbers.example_number_for_type(region, t)
        lengths = [l for l in ((desc and desc.possible_length) or md.general_desc.possible_length) if l > 0]
        if ex and lengths:
            kinds.append((str(ex.national_number), lengths))
    if not kinds:
        return
    seen, tries = set(), 0
    while len(seen) < per and tries < per * 500:
        tries += 1
        example, lengths = rng.choice(kinds)
        length = rng.choice(lengths)
        if rng.random() < 0.8:
            keep = rng.randint(1, max(1, min(len(example), length) - 3))
            n = example[:keep]
        else:
            n = str(rng.randint(1, 9))
        n += "".join(rng.choice("0123456789") for _ in range(length - len(n)))
        try:
            p = phonenumbers.parse("+%d%s" % (md.country_code, n))
        except phonenumbers.NumberParseException:
            continue
        if not phonenumbers.is_valid_number_for_region(p, region) or phonenumbers.number_type(p) not in (T.FIXED_LINE, T.MOBILE, T.FIXED_LINE_OR_MOBILE):
            continue
        e164 = phonenumbers.format_number(p, F.E164)[1:]
        if e164 in seen or len(e164) > 15:
            continue
        seen.add(e164)
        yield phonenumbers.format_number(p, F.NATIONAL), e164


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--per-region", type=int, default=12)
    ap.add_argument("--regions", help="comma-separated ISO codes (default: every region)")
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    regions = args.regions.split(",") if args.regions else sorted(phonenumbers.SUPPORTED_REGIONS)
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    out.write("# valid numbers of phonenumbers %s, seed %d\n" % (phonenumbers.__version__, args.seed))
    out.write("region\ttext\te164\n")
    for region in regions:
        for text, e164 in numbers(region, args.per_region, rng):
            out.write("%s\t%s\t%s\n" % (region, text, e164))


if __name__ == "__main__":
    main()
