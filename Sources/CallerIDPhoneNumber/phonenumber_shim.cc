// The C interface of include/callerid_phonenumber.h over libphonenumber's PhoneNumberUtil.
#include "callerid_phonenumber.h"

#include <phonenumbers/phonemetadata.pb.h>
#include <phonenumbers/phonenumber.pb.h>
#include <phonenumbers/phonenumberutil.h>

#include <cstring>
#include <string>

namespace i18n {
namespace phonenumbers {
// libphonenumber's compiled-in metadata (its generated metadata.cc; the header is not installed):
// a serialized PhoneMetadataCollection, the same bytes PhoneNumberUtil reads at start.
int metadata_size();
const void *metadata_get();
}  // namespace phonenumbers
}  // namespace i18n

using i18n::phonenumbers::PhoneMetadataCollection;
using i18n::phonenumbers::PhoneNumber;
using i18n::phonenumbers::PhoneNumberUtil;

namespace {

const PhoneNumberUtil &util() { return *PhoneNumberUtil::GetInstance(); }

void classify(const PhoneNumber &number, cidpn_number *out) {
    const PhoneNumberUtil &u = util();
    std::string national;
    u.GetNationalSignificantNumber(number, &national);
    out->country_code = number.country_code();
    out->national_digits = static_cast<int32_t>(national.size());
    out->possibility = static_cast<int32_t>(u.IsPossibleNumberWithReason(number));
    out->valid = u.IsValidNumber(number) ? 1 : 0;
    out->type = static_cast<int32_t>(u.GetNumberType(number));
    out->has_extension = number.has_extension() && !number.extension().empty() ? 1 : 0;
    std::string region;
    u.GetRegionCodeForNumber(number, &region);
    if (region.empty()) region = "ZZ";
    std::strncpy(out->region, region.c_str(), sizeof out->region - 1);
    out->region[sizeof out->region - 1] = '\0';
    // E.164 as an integer: calling code then the national significant number (at most 15 digits).
    std::string digits = std::to_string(number.country_code()) + national;
    out->e164 = 0;
    if (digits.size() <= 15) {
        for (char c : digits) out->e164 = out->e164 * 10 + static_cast<uint64_t>(c - '0');
    }
}

// The metadata collection, parsed once (thread-safe static initialization); never freed, so the
// pattern strings handed out stay valid for the life of the process.
const PhoneMetadataCollection &collection() {
    static const PhoneMetadataCollection *parsed = [] {
        auto *c = new PhoneMetadataCollection();
        if (!c->ParseFromArray(i18n::phonenumbers::metadata_get(), i18n::phonenumbers::metadata_size())) c->Clear();
        return c;
    }();
    return *parsed;
}

}  // namespace

extern "C" int32_t cidpn_territory_count(void) { return collection().metadata_size(); }

extern "C" int32_t cidpn_territory_at(int32_t index, cidpn_territory *out) {
    std::memset(out, 0, sizeof *out);
    const PhoneMetadataCollection &c = collection();
    if (index < 0 || index >= c.metadata_size()) return 0;
    const auto &m = c.metadata(index);
    std::strncpy(out->id, m.id().c_str(), sizeof out->id - 1);
    out->country_code = m.country_code();
    std::strncpy(out->national_prefix, m.national_prefix().c_str(), sizeof out->national_prefix - 1);
    out->general_pattern = m.general_desc().national_number_pattern().c_str();
    return 1;
}

extern "C" int32_t cidpn_abi_version(void) { return CIDPN_ABI_VERSION; }

extern "C" int32_t cidpn_parse(const char *text, size_t length, const char *region, cidpn_number *out) {
    std::memset(out, 0, sizeof *out);
    PhoneNumber number;
    const std::string input(text, length);
    const std::string defaultRegion = region ? region : "ZZ";
    const PhoneNumberUtil::ErrorType error = util().Parse(input, defaultRegion, &number);
    if (error != PhoneNumberUtil::NO_PARSING_ERROR) return static_cast<int32_t>(error);
    classify(number, out);
    return CIDPN_PARSED;
}

extern "C" void cidpn_check(int32_t country_code, const char *national, cidpn_number *out) {
    std::memset(out, 0, sizeof *out);
    PhoneNumber number;
    number.set_country_code(country_code);
    const size_t n = std::strlen(national);
    size_t zeros = 0;
    while (zeros + 1 < n && national[zeros] == '0') zeros++;
    uint64_t value = 0;
    for (size_t i = 0; i < n; i++) value = value * 10 + static_cast<uint64_t>(national[i] - '0');
    number.set_national_number(value);
    if (zeros > 0) {
        number.set_italian_leading_zero(true);
        if (zeros > 1) number.set_number_of_leading_zeros(static_cast<int32_t>(zeros));
    }
    classify(number, out);
}

extern "C" int32_t cidpn_country_code_for_region(const char *region) {
    return region ? util().GetCountryCodeForRegion(region) : 0;
}

extern "C" int32_t cidpn_possible_lengths(int32_t country_code, uint32_t *possible, uint32_t *local_only) {
    *possible = 0;
    *local_only = 0;
    const PhoneNumberUtil &u = util();
    PhoneNumber number;
    number.set_country_code(country_code);
    // Possibility depends only on the length (IsPossibleNumberWithReason, any type): probe each.
    uint64_t value = 0;
    for (int length = 1; length <= 17; length++) {
        value = value * 10 + 1;
        number.set_national_number(value);
        switch (u.IsPossibleNumberWithReason(number)) {
        case PhoneNumberUtil::INVALID_COUNTRY_CODE: return 0;
        case PhoneNumberUtil::IS_POSSIBLE: *possible |= 1u << length; break;
        case PhoneNumberUtil::IS_POSSIBLE_LOCAL_ONLY: *local_only |= 1u << length; break;
        default: break;
        }
    }
    return 1;
}
