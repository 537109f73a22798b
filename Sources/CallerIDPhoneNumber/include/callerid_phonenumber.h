/*
 * callerid_phonenumber.h — a small C interface over Google's libphonenumber (C++), for the
 * CallerID build pipeline. Built into libcallerid-phonenumber.so, which the pipeline loads with
 * dlopen when it first needs it: neither the `lookup` tool's start-up nor the reader library
 * (libcallerid.so, the Call Directory module) ever loads libphonenumber, ICU or protobuf.
 *
 * Thread safety: every function may be called from any thread (libphonenumber's
 * PhoneNumberUtil is a thread-safe singleton).
 */
#ifndef CALLERID_PHONENUMBER_H
#define CALLERID_PHONENUMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function or struct below changes; the loader refuses another version. */
#define CIDPN_ABI_VERSION 2

/* What libphonenumber says about a number's length (its ValidationResult, same order). */
enum cidpn_possibility {
    CIDPN_IS_POSSIBLE = 0,
    CIDPN_IS_POSSIBLE_LOCAL_ONLY = 1,
    CIDPN_INVALID_COUNTRY_CODE = 2,
    CIDPN_TOO_SHORT = 3,
    CIDPN_INVALID_LENGTH = 4,
    CIDPN_TOO_LONG = 5
};

/* Why a text could not be parsed at all (its ErrorType, same order; 0 = parsed). */
enum cidpn_parse_error {
    CIDPN_PARSED = 0,
    CIDPN_INVALID_COUNTRY_CODE_ERROR = 1,
    CIDPN_NOT_A_NUMBER = 2,
    CIDPN_TOO_SHORT_AFTER_IDD = 3,
    CIDPN_TOO_SHORT_NSN = 4,
    CIDPN_TOO_LONG_NSN = 5
};

/* One parsed number. */
typedef struct cidpn_number {
    uint64_t e164;            /* the E.164 digits as an integer (country code first); 0 if none */
    int32_t country_code;     /* the calling code (7, 44, 1, 886…) */
    int32_t possibility;      /* enum cidpn_possibility */
    int32_t valid;            /* 1 when IsValidNumber (the number is in an allocated range) */
    int32_t type;             /* libphonenumber's PhoneNumberType (0 FIXED_LINE … 11 UNKNOWN) */
    int32_t national_digits;  /* digits of the national significant number (leading zeros kept) */
    char region[4];           /* "RU", "US", "001" (non-geographic), "ZZ" (unknown); NUL-terminated */
    int32_t has_extension;    /* 1 when the text carried an extension (dropped from e164) */
} cidpn_number;

/* CIDPN_ABI_VERSION of the loaded library. */
int32_t cidpn_abi_version(void);

/*
 * Parses `length` bytes of UTF-8 `text` as people write numbers ("+7 913 123-45-67",
 * "8 (913) 123 45 67", "0800 123 4567", "ext. 12") with `region` (ISO 3166 alpha-2, NUL-terminated;
 * NULL or "ZZ" when the text must be international) as the default country. Returns
 * enum cidpn_parse_error; on 0 fills *out.
 */
int32_t cidpn_parse(const char *text, size_t length, const char *region, cidpn_number *out);

/*
 * Classifies an E.164 number given as its calling code and national significant number
 * (digits, NUL-terminated; leading zeros kept, as in Italy). Fills *out as cidpn_parse does.
 */
void cidpn_check(int32_t country_code, const char *national, cidpn_number *out);

/* The calling code of a region (ISO 3166 alpha-2 or "001"), 0 when unknown. */
int32_t cidpn_country_code_for_region(const char *region);

/*
 * Lengths of national significant numbers that libphonenumber calls possible for
 * `country_code` (bit n set: n digits possible), and those possible only for local dialling.
 * Returns 0 when the calling code is not assigned (both masks 0), 1 otherwise. This is what
 * IsPossibleNumberWithReason tests for a number of any type, so a caller may cache it.
 */
int32_t cidpn_possible_lengths(int32_t country_code, uint32_t *possible, uint32_t *local_only);

/* One territory of libphonenumber's metadata: a country, or "001" for a non-geographic calling code. */
typedef struct cidpn_territory {
    char id[4];                        /* "RU", "KR", "001"; NUL-terminated */
    int32_t country_code;              /* the calling code */
    char national_prefix[8];           /* the trunk prefix ("8", "0", "06"), "" when none; NUL-terminated */
    const char *general_pattern;       /* the general_desc national_number_pattern: a regular expression
                                          every national significant number of the territory matches
                                          whole; NUL-terminated, valid for the life of the process */
} cidpn_territory;

/* How many territories the metadata holds. */
int32_t cidpn_territory_count(void);

/* Fills *out with territory `index` (0 ..< cidpn_territory_count()); returns 0 when out of range. */
int32_t cidpn_territory_at(int32_t index, cidpn_territory *out);

#ifdef __cplusplus
}
#endif

#endif
