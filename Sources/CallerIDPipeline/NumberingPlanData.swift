// The built-in numbering plan: which calling code each country has, and for the countries
// CallerID has rules for, how their numbers are written nationally. Extend it here (one line
// per country) or at run time with `--numbering-plan FILE.json` (same fields; see
// docs/PIPELINE.md). Sources: ITU-T E.164 country code assignments and the national
// numbering plans; cross-checked against libphonenumber's metadata (2025).

extension NumberingPlan {
    /// ISO 3166 alpha-2 code followed by the calling code, for every country and territory
    /// with an E.164 country code.
    static let callingCodes = """
AC247 AD376 AE971 AF93 AG1 AI1 AL355 AM374 AO244 AR54 AS1 AT43 AU61 AW297 AX358 AZ994 BA387 BB1
BD880 BE32 BF226 BG359 BH973 BI257 BJ229 BL590 BM1 BN673 BO591 BQ599 BR55 BS1 BT975 BW267 BY375
BZ501 CA1 CC61 CD243 CF236 CG242 CH41 CI225 CK682 CL56 CM237 CN86 CO57 CR506 CU53 CV238 CW599 CX61
CY357 CZ420 DE49 DJ253 DK45 DM1 DO1 DZ213 EC593 EE372 EG20 EH212 ER291 ES34 ET251 FI358 FJ679 FK500
FM691 FO298 FR33 GA241 GB44 GD1 GE995 GF594 GG44 GH233 GI350 GL299 GM220 GN224 GP590 GQ240 GR30
GT502 GU1 GW245 GY592 HK852 HN504 HR385 HT509 HU36 ID62 IE353 IL972 IM44 IN91 IO246 IQ964 IR98 IS354
IT39 JE44 JM1 JO962 JP81 KE254 KG996 KH855 KI686 KM269 KN1 KP850 KR82 KW965 KY1 KZ7 LA856 LB961 LC1
LI423 LK94 LR231 LS266 LT370 LU352 LV371 LY218 MA212 MC377 MD373 ME382 MF590 MG261 MH692 MK389 ML223
MM95 MN976 MO853 MP1 MQ596 MR222 MS1 MT356 MU230 MV960 MW265 MX52 MY60 MZ258 NA264 NC687 NE227 NF672
NG234 NI505 NL31 NO47 NP977 NR674 NU683 NZ64 OM968 PA507 PE51 PF689 PG675 PH63 PK92 PL48 PM508 PR1
PS970 PT351 PW680 PY595 QA974 RE262 RO40 RS381 RU7 RW250 SA966 SB677 SC248 SD249 SE46 SG65 SH290
SI386 SJ47 SK421 SL232 SM378 SN221 SO252 SR597 SS211 ST239 SV503 SX1 SY963 SZ268 TA290 TC1 TD235
TG228 TH66 TJ992 TK690 TL670 TM993 TN216 TO676 TR90 TT1 TV688 TW886 TZ255 UA380 UG256 US1 UY598
UZ998 VA39 VC1 VE58 VG1 VI1 VN84 VU678 WF681 WS685 XK383 YE967 YT262 ZA27 ZM260 ZW263
"""

    /// Detailed rules: trunk prefix(es), international prefix(es), lengths of the national
    /// significant number (NSN, the number without country code and trunk prefix) and the
    /// digits an NSN may start with (default: 1-9 when the trunk prefix is 0, any otherwise).
    static let builtInRules: [CountryRule] = [
        // Russia and Kazakhstan share +7: 8 is the trunk prefix, 8~10 (written 810) the old
        // international prefix. NSN: 3-digit ABC/DEF code + 7 digits.
        CountryRule("RU", "7", trunk: ["8"], international: ["810", "00"], lengths: "10", first: "3-9"),
        CountryRule("KZ", "7", trunk: ["8"], international: ["810", "00"], lengths: "10", first: "6-7"),
        // North American Numbering Plan: NPA-NXX-XXXX, 1 is the trunk ("long distance") prefix.
        CountryRule("US", "1", trunk: ["1"], international: ["011"], lengths: "10", first: "2-9"),
        CountryRule("CA", "1", trunk: ["1"], international: ["011"], lengths: "10", first: "2-9"),
        CountryRule("PR", "1", trunk: ["1"], international: ["011"], lengths: "10", first: "2-9"),
        CountryRule("BS", "1", trunk: ["1"], international: ["011"], lengths: "10", first: "2-9"),
        CountryRule("TT", "1", trunk: ["1"], international: ["011"], lengths: "10", first: "2-9"),
        // Korea: Seoul 02 + 7/8 digits, other areas and mobiles 0xx + 7/8 digits.
        CountryRule("KR", "82", trunk: ["0"], international: ["00700", "001", "002", "005", "006", "008", "00"], lengths: "8-10"),
        CountryRule("GB", "44", trunk: ["0"], international: ["00"], lengths: "9-10"),
        CountryRule("DE", "49", trunk: ["0"], international: ["00"], lengths: "6-13"),
        CountryRule("FR", "33", trunk: ["0"], international: ["00"], lengths: "9"),
        // China: area code (2-3 digits) + 7-8 digits, mobiles 1xx + 8 digits.
        CountryRule("CN", "86", trunk: ["0"], international: ["00"], lengths: "9-11"),
        CountryRule("JP", "81", trunk: ["0"], international: ["010"], lengths: "9-10"),
        CountryRule("IN", "91", trunk: ["0"], international: ["00"], lengths: "10"),
        CountryRule("UA", "380", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("BY", "375", trunk: ["80", "8"], international: ["810", "00"], lengths: "9"),
        // The other countries of the store directory (../shared/data/starbucks).
        CountryRule("AD", "376", international: ["00"], lengths: "6,8-9"),
        CountryRule("AE", "971", trunk: ["0"], international: ["00"], lengths: "8-9"),
        CountryRule("AR", "54", trunk: ["0"], international: ["00"], lengths: "10-11"),
        CountryRule("AT", "43", trunk: ["0"], international: ["00"], lengths: "4-13"),
        CountryRule("AU", "61", trunk: ["0"], international: ["0011"], lengths: "9"),
        CountryRule("AW", "297", international: ["00"], lengths: "7"),
        CountryRule("AZ", "994", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("BE", "32", trunk: ["0"], international: ["00"], lengths: "8-9"),
        CountryRule("BG", "359", trunk: ["0"], international: ["00"], lengths: "6-9"),
        CountryRule("BH", "973", international: ["00"], lengths: "8"),
        CountryRule("BN", "673", international: ["00"], lengths: "7"),
        CountryRule("BO", "591", trunk: ["0"], international: ["00"], lengths: "8"),
        CountryRule("BR", "55", trunk: ["0"], international: ["00"], lengths: "10-11"),
        CountryRule("CH", "41", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("CL", "56", international: ["00"], lengths: "9"),
        CountryRule("CO", "57", trunk: ["0"], international: ["00"], lengths: "10"),
        CountryRule("CR", "506", international: ["00"], lengths: "8"),
        CountryRule("CW", "599", international: ["00"], lengths: "7-8"),
        CountryRule("CY", "357", international: ["00"], lengths: "8"),
        CountryRule("CZ", "420", international: ["00"], lengths: "9"),
        CountryRule("DK", "45", international: ["00"], lengths: "8"),
        CountryRule("EG", "20", trunk: ["0"], international: ["00"], lengths: "8-10"),
        CountryRule("ES", "34", international: ["00"], lengths: "9"),
        CountryRule("FI", "358", trunk: ["0"], international: ["00"], lengths: "5-12"),
        CountryRule("GR", "30", international: ["00"], lengths: "10"),
        CountryRule("GT", "502", international: ["00"], lengths: "8"),
        CountryRule("HU", "36", trunk: ["06"], international: ["00"], lengths: "8-9"),
        CountryRule("ID", "62", trunk: ["0"], international: ["001", "007", "008", "00"], lengths: "7-12"),
        CountryRule("IE", "353", trunk: ["0"], international: ["00"], lengths: "7-9"),
        CountryRule("IT", "39", international: ["00"], lengths: "6-11"),
        CountryRule("JO", "962", trunk: ["0"], international: ["00"], lengths: "8-9"),
        CountryRule("KH", "855", trunk: ["0"], international: ["001", "00"], lengths: "8-9"),
        CountryRule("KW", "965", international: ["00"], lengths: "8"),
        CountryRule("LB", "961", trunk: ["0"], international: ["00"], lengths: "7-8"),
        CountryRule("LU", "352", international: ["00"], lengths: "4-11"),
        CountryRule("MA", "212", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("MC", "377", international: ["00"], lengths: "8-9"),
        CountryRule("MX", "52", trunk: ["01", "0"], international: ["00"], lengths: "10"),
        CountryRule("MY", "60", trunk: ["0"], international: ["00"], lengths: "8-10"),
        CountryRule("NL", "31", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("NO", "47", international: ["00"], lengths: "8"),
        CountryRule("NZ", "64", trunk: ["0"], international: ["00"], lengths: "8-10"),
        CountryRule("OM", "968", international: ["00"], lengths: "8"),
        CountryRule("PA", "507", international: ["00"], lengths: "7-8"),
        CountryRule("PE", "51", trunk: ["0"], international: ["00"], lengths: "8-9"),
        CountryRule("PH", "63", trunk: ["0"], international: ["00"], lengths: "8-10"),
        CountryRule("PL", "48", international: ["00"], lengths: "9"),
        CountryRule("PT", "351", international: ["00"], lengths: "9"),
        CountryRule("QA", "974", international: ["00"], lengths: "8"),
        CountryRule("RO", "40", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("SA", "966", trunk: ["0"], international: ["00"], lengths: "8-9"),
        CountryRule("SE", "46", trunk: ["0"], international: ["00"], lengths: "6-10"),
        CountryRule("SG", "65", international: ["000", "001", "00"], lengths: "8"),
        CountryRule("SK", "421", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("SV", "503", international: ["00"], lengths: "8"),
        CountryRule("TH", "66", trunk: ["0"], international: ["001", "00"], lengths: "8-9"),
        CountryRule("TR", "90", trunk: ["0"], international: ["00"], lengths: "10"),
        CountryRule("TW", "886", trunk: ["0"], international: ["002", "005", "006", "007", "009", "00"], lengths: "8-9"),
        CountryRule("VN", "84", trunk: ["0"], international: ["00"], lengths: "9-10"),
        CountryRule("ZA", "27", trunk: ["0"], international: ["00"], lengths: "9"),
        // The rest of world zone 5 (the Americas south of the NANP), so that no +5… number
        // goes unchecked: every code 500-509, 51-58 and 590-599 has its national lengths.
        CountryRule("FK", "500", international: ["00"], lengths: "5"),
        CountryRule("BZ", "501", international: ["00"], lengths: "7", first: "2-8"),
        CountryRule("HN", "504", international: ["00"], lengths: "8"),
        CountryRule("NI", "505", international: ["00"], lengths: "8"),
        CountryRule("PM", "508", trunk: ["0"], international: ["00"], lengths: "6"),
        CountryRule("HT", "509", international: ["00"], lengths: "8"),
        // Cuba: Havana 7 + 6-7 digits, provinces 2-3 digits + 4-6, mobiles 5 + 7 digits.
        CountryRule("CU", "53", trunk: ["0"], international: ["119"], lengths: "6-8"),
        CountryRule("VE", "58", trunk: ["0"], international: ["00"], lengths: "10"),
        CountryRule("GP", "590", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("BL", "590", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("MF", "590", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("GY", "592", international: ["001"], lengths: "7"),
        CountryRule("EC", "593", trunk: ["0"], international: ["00"], lengths: "8-9"),
        CountryRule("GF", "594", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("PY", "595", trunk: ["0"], international: ["00"], lengths: "6-9"),
        CountryRule("MQ", "596", trunk: ["0"], international: ["00"], lengths: "9"),
        CountryRule("SR", "597", international: ["00"], lengths: "6-7"),
        CountryRule("UY", "598", trunk: ["0"], international: ["00"], lengths: "8"),
        CountryRule("BQ", "599", international: ["00"], lengths: "7"),
    ]
}
