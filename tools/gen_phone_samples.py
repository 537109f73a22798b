#!/usr/bin/env python3
"""Phone numbers as people type them, judged by libphonenumber.

Generates numbers of every type libphonenumber has an example for, in many regions, writes each
the way people do (national format, international, E.164, dialled from another country, digits
only, odd separators, an extension), and records what libphonenumber (the `phonenumbers`
package, pinned to the metadata of Debian's libphonenumber8, 8.12.57) makes of the text: the
E.164 number when it calls the number possible, or the reason it does not. Numbers of an
impossible length (digits added or removed) are mixed in. The pipeline's normalizer is judged
against this file (Tests/CallerIDTests/PhoneNumberAgreementTests.swift on a small sample,
tools/bench_numbers.sh on a large one).

Usage:
    pip install phonenumbers==8.12.57
    python3 tools/gen_phone_samples.py --seed 13 --per-type 2 -o Tests/CallerIDTests/Fixtures/phone-samples.tsv

Output: TSV with a header: region, form, text, expected (E.164 digits, or "-REASON" with REASON
too-short, too-long, invalid-length, local-only, invalid-country-code, not-a-number).
"""
import argparse, random, sys

import phonenumbers
from phonenumbers import PhoneNumberFormat as F, PhoneNumberType as T, ValidationResult as V

PINNED = "8.12.57"
TYPES = [T.FIXED_LINE, T.MOBILE, T.TOLL_FREE, T.PREMIUM_RATE, T.SHARED_COST, T.VOIP,
         T.PERSONAL_NUMBER, T.PAGER, T.UAN, T.VOICEMAIL]
REASONS = {V.TOO_SHORT: "too-short", V.TOO_LONG: "too-long", V.INVALID_LENGTH: "invalid-length",
           V.IS_POSSIBLE_LOCAL_ONLY: "local-only", V.INVALID_COUNTRY_CODE: "invalid-country-code"}


def judge(text, region):
    """What libphonenumber makes of `text` read in `region`: E.164 digits or -REASON."""
    try:
        n = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException as e:
        return "-" + {e.INVALID_COUNTRY_CODE: "invalid-country-code", e.TOO_SHORT_NSN: "too-short",
                      e.TOO_SHORT_AFTER_IDD: "too-short", e.TOO_LONG: "too-long"}.get(e.error_type, "not-a-number")
    r = phonenumbers.is_possible_number_with_reason(n)
    if r == V.IS_POSSIBLE:
        e164 = phonenumbers.format_number(n, F.E164)[1:]
        return e164 if len(e164) <= 15 else "-too-long"
    return "-" + REASONS.get(r, "invalid-length")


def variants(n, region, rng, regions):
    """(reading region, form, text) for one number."""
    national = phonenumbers.format_number(n, F.NATIONAL)
    out = [(region, "national", national),
           (region, "international", phonenumbers.format_number(n, F.INTERNATIONAL)),
           (region, "e164", phonenumbers.format_number(n, F.E164)),
           (region, "national-digits", "".join(c for c in national if c.isdigit()))]
    other = rng.choice(regions)
    if other != region:
        out.append((other, "dialled-from-" + other, phonenumbers.format_out_of_country_calling_number(n, other)))
    sep = rng.choice([" ", ".", "-", "/", "  "])
    digits = "".join(c for c in national if c.isdigit())
    cut = max(1, len(digits) // 2)
    out.append((region, "odd-separators", "(" + digits[:3] + ")" + sep + digits[3:cut + 1] + sep + digits[cut + 1:]))
    if rng.random() < 0.2:
        out.append((region, "extension", phonenumbers.format_number(n, F.INTERNATIONAL) + " ext. " + str(rng.randint(1, 999))))
    return out


def numbers_of(region, kind, count, rng):
    """Up to `count` valid numbers of `kind` in `region`: the example with its last digits changed."""
    example = phonenumbers.example_number_for_type(region, kind)
    if example is None:
        return []
    base = phonenumbers.national_significant_number(example)
    found = []
    for _ in range(40 * count):
        if len(found) >= count:
            break
        k = min(len(base) - 1, rng.randint(1, 4))
        nsn = base[:len(base) - k] + "".join(rng.choice("0123456789") for _ in range(k))
        try:
            n = phonenumbers.parse("+" + str(example.country_code) + nsn, None)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(n) and phonenumbers.region_code_for_number(n) == region:
            found.append(n)
    return found or [example]


def impossible(n, rng):
    """The number with digits added or removed so that libphonenumber calls its length impossible."""
    nsn = phonenumbers.national_significant_number(n)
    for _ in range(20):
        if rng.random() < 0.5 and len(nsn) > 3:
            cand = nsn[:len(nsn) - rng.randint(1, min(3, len(nsn) - 2))]
        else:
            cand = nsn + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 3)))
        try:
            m = phonenumbers.parse("+" + str(n.country_code) + cand, None)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_possible_number_with_reason(m) not in (V.IS_POSSIBLE, V.IS_POSSIBLE_LOCAL_ONLY):
            return m
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--per-type", type=int, default=2, help="numbers per region and type")
    p.add_argument("--regions", type=int, default=0, help="use this many regions (0: every region)")
    p.add_argument("-o", "--output", default="-")
    a = p.parse_args()
    if phonenumbers.__version__ != PINNED:
        sys.exit(f"phonenumbers {phonenumbers.__version__} installed; the judge must be {PINNED} "
                 f"(the metadata of Debian's libphonenumber8): pip install phonenumbers=={PINNED}")
    rng = random.Random(a.seed)
    regions = sorted(r for r in phonenumbers.SUPPORTED_REGIONS if r != "001")
    if a.regions:
        regions = sorted(rng.sample(regions, a.regions))
    out = open(a.output, "w", encoding="utf-8") if a.output != "-" else sys.stdout
    out.write("region\tform\ttext\texpected\n")
    for region in regions:
        for kind in TYPES:
            for n in numbers_of(region, kind, a.per_type, rng):
                for reading, form, text in variants(n, region, rng, regions):
                    out.write(f"{reading}\t{form}\t{text}\t{judge(text, reading)}\n")
                bad = impossible(n, rng)
                if bad is not None:
                    for form, text in (("impossible-international", phonenumbers.format_number(bad, F.INTERNATIONAL)),
                                       ("impossible-national", phonenumbers.format_number(bad, F.NATIONAL))):
                        out.write(f"{region}\t{form}\t{text}\t{judge(text, region)}\n")


if __name__ == "__main__":
    main()
