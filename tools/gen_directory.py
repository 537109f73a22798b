#!/usr/bin/env python3
"""Generate a deterministic, realistic synthetic caller-ID phone directory.

Every row is NUMBER, LABEL, CATEGORY and optionally WEIGHT. About 75% of the numbers come
from real Russian numbering-plan ranges (Rossvyaz export, weighted by capacity); the rest
from realistic ranges of other countries (US/CA, KR, GB, DE, KZ, FR, UA, BY). About 40% of
the rows belong to businesses that own runs of consecutive numbers; labels follow a Zipf
law over a pool of invented Cyrillic, Latin and Hangul business and personal names.

The same arguments always give byte-identical output (everything is drawn from
random.Random(seed); --weights and --messy use their own generators, so adding them does
not change the numbers, labels or categories of the rows).

Two profiles: `default`, the data described above (its output has not changed since profiles
were added), and `study`, calibrated with tools/data_stats.py to the data of the performance
study in BRIEF.md §4 (at 4,000,000 rows: TSV ~33 B/entry, key-gap entropy ~10.7 bits, label
entropy ~7.9 bits, ~4.3 MB of distinct label text); see PROFILES below for how.

Examples:
  gen_directory.py --entries 3000 --seed 7 -o samples/sample.tsv
  gen_directory.py --profile study --entries 4000000 -o study.tsv    # the benchmarks' data
  gen_directory.py --entries 1000000 --format jsonl --weights -o dir.jsonl
  gen_directory.py --entries 50000 --messy --format csv -o messy.csv
"""

import argparse
import bisect
import csv
import io
import itertools
import json
import os
import random
import sys
import time

# ----------------------------------------------------------------------------------------
# Categories

CATEGORIES = ["identify", "block", "spam", "scam", "collector", "survey", "telemarketing", "fraud"]
# Per-row weights; identify is a little above 85 because 1% of rows become empty-label
# block-type rows afterwards.
CAT_WEIGHTS = [85.8, 3.6, 3.4, 1.8, 1.5, 1.0, 2.0, 0.9]
# Empty-label rows: only blocking categories (every non-identify category blocks).
BLOCK_WEIGHTS = [0, 45, 20, 10, 5, 3, 10, 7]

# ----------------------------------------------------------------------------------------
# Word lists (invented; a few dozen words per script, combined into many distinct labels)

RU_WORDS = (
    "Ромашка Вектор Альянс Гранит Меридиан Восход Рассвет Радуга Берёзка Сфера Импульс Орбита "
    "Феникс Атлант Надежда Уют Здоровье Исток Север Магистраль Парус Престиж Лидер Сигма Кедр "
    "Эталон Гарант Фортуна Аврора Виктория Столица Премьер Континент Ладога Волна Прогресс "
    "Сокол Янтарь Бриз Глобус Звезда Заря Каскад Семья Добрый Доктор Айболит Планета Оптима"
).split()
RU_PREFIX = (
    "Строй Техно Агро Энерго Транс Мед Торг Газ Нефть Пром Авто Спец Тех Эко Фарм Связь Росс "
    "Евро Сиб Урал Волга Дон Нева Капитал Мега Альфа Профи Гор Лес Хим"
).split()
RU_SUFFIX = (
    "Инвест Сервис Торг Строй Ресурс Комплект Снаб Маркет Трейд Групп Холдинг Плюс Лайн Систем "
    "Центр Пром Финанс Капитал Логистик Проект Монтаж Транс Кредит Страх Телеком"
).split()
RU_SURNAMES = (
    "Иванов Смирнов Кузнецов Попов Васильев Петров Соколов Михайлов Новиков Фёдоров Морозов "
    "Волков Алексеев Лебедев Семёнов Егоров Павлов Козлов Степанов Николаев Орлов Андреев "
    "Макаров Никитин Захаров Зайцев Соловьёв Борисов Яковлев Григорьев Романов Воробьёв "
    "Сергеев Кузьмин Фролов Александров Дмитриев Королёв Гусев Киселёв Ильин Тарасов"
).split()
RU_MALE = "Александр Сергей Дмитрий Андрей Алексей Максим Евгений Иван Михаил Артём Николай Владимир Олег Игорь Павел Роман".split()
RU_FEMALE = "Елена Ольга Наталья Татьяна Ирина Светлана Анна Мария Юлия Екатерина Марина Галина Людмила Дарья".split()
RU_INITIALS = "АБВГДЕИКЛМНОПРСТФЮЯ"
RU_BIZ = [
    "Аптека", "Такси", "Клиника", "Стоматология", "Автосервис", "Салон красоты", "Магазин", "Кафе",
    "Ресторан", "Пиццерия", "Гостиница", "Турагентство", "Агентство недвижимости", "Фитнес-клуб",
    "Ветклиника", "Химчистка", "Шиномонтаж", "Автошкола", "Цветы", "Доставка суши",
    "Юридическая компания", "Страховая компания", "Управляющая компания", "Ломбард", "Микрозайм",
    "Интернет-провайдер", "Окна", "Натяжные потолки", "Грузоперевозки", "Служба доставки",
]
RU_FORMS = ["ООО", "ООО", "ООО", "АО", "ПАО", "ЗАО"]
RU_NUMBERED = ["Школа", "Детский сад", "Поликлиника", "Городская больница", "Аптека", "Гимназия", "Отделение банка"]
RU_TRADES = ["сантехник", "электрик", "репетитор", "курьер", "риелтор", "мастер маникюра", "няня", "грузчики", "юрист", "ремонт квартир"]
RU_HEAD = [
    "Народбанк", "Газкредитбанк", "Такси Ветер", "Доставка «Вкусно и быстро»", "СибТелеком",
    "Мегасвязь", "Почта", "Госинформ", "Аптеки «Здоровье»", "Озон-Экспресс", "Авито-Доставка",
    "Служба поддержки Волгабанка",
]

EN_WORDS = (
    "Blue Golden Silver Green Royal Grand Prime Summit Harbor Oak Maple Cedar River Lake Sunrise "
    "Northern Pacific Atlantic Liberty Eagle Falcon Pioneer Apex Crown Star Bright Urban Metro "
    "Union Heritage Evergreen Horizon Coastal Alpine Bridge Stone Iron Crystal Phoenix Lotus"
).split()
EN_NOUNS = (
    "Solutions Systems Partners Holdings Logistics Dental Realty Motors Foods Consulting Media "
    "Electric Plumbing Construction Insurance Capital Bakery Travel Pharmacy Fitness Design "
    "Services Trading Clinic Labs Networks Energy Legal Cleaning Roofing"
).split()
EN_SURNAMES = (
    "Smith Johnson Williams Brown Jones Miller Davis Wilson Taylor Clark Walker Hall Young King "
    "Wright Scott Green Baker Adams Nelson Müller Schmidt Schneider Fischer Weber Meyer Wagner "
    "Becker Schulz Hoffmann Martin Bernard Dubois Thomas Robert Richard Petit Durand Leroy Moreau "
    "O'Brien Kowalski"
).split()
EN_FIRST = "James John Robert Michael David Mary Linda Sarah Emma Anna Thomas Peter Laura Julia Lukas Marie Pierre Sophie Jürgen Zoë".split()
EN_CITIES = ["London", "Manchester", "Berlin", "Munich", "Hamburg", "Paris", "Lyon", "New York", "Chicago",
             "Toronto", "Dallas", "Seattle", "Boston", "Denver", "Austin", "Almaty", "Kyiv", "Minsk"]
EN_LEGAL = ["Ltd", "Ltd", "LLC", "Inc.", "GmbH", "GmbH", "& Co. KG", "S.A.R.L.", "PLC", "Corp."]
EN_BIZ = ["Taxi", "Bank", "Hotel", "Café", "Pharmacy", "Apotheke", "Bäckerei", "Boulangerie", "Pharmacie",
          "Auto Repair", "Dental Care", "Fitness", "Florist", "Insurance", "Travel", "Car Rental", "Locksmith"]
EN_HEAD = [
    "Northwind Bank", "Metro Taxi", "Bluebird Pharmacy", "Atlas Telecom", "Contoso Delivery",
    "Acme Insurance", "Global Parcel Service", "City Hospital",
]

KO_WORDS = (
    "행복 우리 하나 미래 새마을 중앙 서울 한빛 푸른 대한 희망 사랑 믿음 소망 해피 온누리 새봄 "
    "청솔 늘푸른 다온 한솔 명문 참좋은 건강 튼튼 제일 으뜸 한마음 동네 큰길 바른 밝은 새빛 보람 "
    "드림 스마트 그린 블루 나라 한국"
).split()
KO_BIZ = "약국 은행 치킨 병원 치과 의원 한의원 부동산 마트 학원 택시 피자 식당 세탁소 정비소 꽃집 안경원 미용실 카페 보험".split()
KO_DISTRICTS = "강남 역삼 서초 잠실 종로 명동 신촌 홍대 마포 여의도 영등포 노원 분당 일산 수원 해운대 서면 동래 부평 송도".split()
KO_SURNAMES = "김 이 박 최 정 강 조 윤 장 임 한 오".split()
KO_GIVEN = "민준 서연 지훈 수빈 현우 지민 예준 하은 도윤 서윤 시우 지우 주원 하준 유진 채원".split()
KO_HEAD = ["하나로은행", "행복택시", "우리동네약국", "새마을금고 고객센터", "한빛통신", "바른택배"]

# Labels people give to unwanted callers, by category and script.
SPECIAL = {
    "cyr": {
        "block": ["Нежелательный", "Заблокирован"],
        "spam": ["Спам", "Навязчивые звонки", "Реклама"],
        "scam": ["Мошенники", "Подозрение на мошенничество"],
        "collector": ["Коллекторы", "Коллекторское агентство", "Взыскание долгов"],
        "survey": ["Опрос", "Соцопрос"],
        "telemarketing": ["Телемаркетинг", "Продажи по телефону", "Call-центр"],
        "fraud": ["Лжесотрудники банка", "Мошенничество"],
    },
    "lat": {
        "block": ["Blocked", "Unwanted"],
        "spam": ["Spam", "Spam Risk", "Robocall"],
        "scam": ["Scam Likely", "Potential Scam"],
        "collector": ["Debt Collector", "Collections Agency"],
        "survey": ["Survey", "Political Survey"],
        "telemarketing": ["Telemarketer", "Telemarketing"],
        "fraud": ["Fraud", "Fake bank security"],
    },
    "ko": {
        "block": ["차단", "수신거부"],
        "spam": ["스팸", "광고"],
        "scam": ["보이스피싱", "사기 의심"],
        "collector": ["채권추심"],
        "survey": ["여론조사", "설문조사"],
        "telemarketing": ["텔레마케팅", "보험 권유"],
        "fraud": ["금융사기"],
    },
}
SPECIAL_SHARE = 0.35  # of non-identify rows that get a category-typical label

# ----------------------------------------------------------------------------------------
# Number ranges

def block(prefix, sublen, first="0123456789"):
    """Ranges of numbers prefix + d + (sublen-1 digits) for each allowed first digit d."""
    return [(int(prefix + d + "0" * (sublen - 1)), 10 ** (sublen - 1)) for d in first]


US_NPAS = ("201 202 203 205 206 207 208 212 213 214 215 216 217 301 303 305 310 312 313 314 315 404 405 "
           "406 408 412 415 416 418 503 504 510 512 514 602 604 609 610 612 613 617 646 647 702 703 704 "
           "713 714 718 720 754 773 780 786 801 804 808 813 816 818 832 858 904 905 917 925 949 954 972").split()


def nanp(npas):
    out = []
    for npa in npas:
        for n in "23456789":  # NXX: first digit 2-9, N11 service codes excluded
            out.append((int("1" + npa + n + "000000"), 110000))    # N00..N10
            out.append((int("1" + npa + n + "120000"), 880000))    # N12..N99
    return out


# country -> (share of all rows in %, label script mix, [(kind weight, ranges)])
FOREIGN = {
    "US": (9.0, [("lat", 1.0)], [
        (0.96, nanp(US_NPAS)),
        (0.04, nanp(["800", "888", "877", "866"])),
    ]),
    "KR": (5.0, [("ko", 0.85), ("lat", 0.15)], [
        (0.62, block("8210", 8, "23456789")),                                  # 010-xxxx-xxxx
        (0.16, block("822", 7, "23456789") + block("822", 8, "23456789")),     # Seoul 02
        (0.10, block("8251", 7, "23456789") + block("8251", 8, "23456789")     # Busan, Incheon,
               + block("8232", 7, "23456789") + block("8231", 8, "23456789")),  # Gyeonggi
        (0.12, [(int(p + "0000"), 10000) for p in                              # 1588-xxxx
                ("821588", "821577", "821544", "821600", "821644", "821661", "821666", "821670", "821688", "821899")]),
    ]),
    "GB": (3.0, [("lat", 1.0)], [
        (0.60, block("447", 9, "12345789")),                                   # 07xxx xxxxxx
        (0.28, block("4420", 8, "378")),                                       # London 020
        (0.12, block("44161", 7, "2345789") + block("44121", 7, "2345789")),   # Manchester, Birmingham
    ]),
    "DE": (3.0, [("lat", 1.0)], [
        (0.30, [r for p in ("49151", "49152", "49157", "49159") for r in block(p, 8)]),
        (0.30, [r for p in ("49160", "49162", "49163", "49170", "49171", "49172", "49173", "49174",
                            "49175", "49176", "49177", "49178", "49179") for r in block(p, 7)]),
        (0.40, block("4930", 8, "23456789") + block("4940", 8, "23456789") + block("4989", 8, "123456789")),
    ]),
    "KZ": (2.5, [("cyr", 0.9), ("lat", 0.1)], [
        (0.80, [r for p in ("7700", "7701", "7702", "7705", "7707", "7708", "7747", "7771", "7775",
                            "7776", "7777", "7778") for r in block(p, 7)]),
        (0.20, block("7727", 7, "23") + block("77172", 6, "234567")),          # Almaty, Astana
    ]),
    "FR": (1.2, [("lat", 1.0)], [
        (0.70, block("336", 8) + block("337", 8, "3456789")),
        (0.30, block("331", 8, "123456789")),                                 # Paris
    ]),
    "UA": (0.8, [("cyr", 0.8), ("lat", 0.2)], [
        (0.85, [r for p in ("38050", "38063", "38066", "38067", "38068", "38073", "38093", "38095",
                            "38096", "38097", "38098", "38099") for r in block(p, 7, "123456789")]),
        (0.15, block("38044", 7, "2345")),                                    # Kyiv
    ]),
    "BY": (0.5, [("cyr", 0.85), ("lat", 0.15)], [
        (0.85, [r for p in ("37529", "37533", "37544", "37525") for r in block(p, 7, "1235678")]),
        (0.15, block("37517", 7, "2345")),                                    # Minsk
    ]),
}
RU_SHARE = 75.0
RU_SCRIPTS = [("cyr", 0.9), ("lat", 0.1)]
RUN_SHARE = 0.40

# Profiles. "default" is the generator's original data (its output is unchanged). "study" is
# calibrated to the published characteristics of the performance study's data (BRIEF.md §4),
# measured with tools/data_stats.py on 4,000,000 rows: TSV ~33 B/entry, key-gap entropy
# ~10.8 bits, label-value entropy ~7.8 bits, ~4.3 MB of distinct label text. To get there it
# (a) spreads the members of a business's run over a cluster (most steps +1, some longer),
# (b) draws labels from a larger pool with a steeper Zipf law, the frequent labels being the
# shorter ones, plus a few labels used once (private persons), (c) draws more numbers from the
# other countries' wide ranges (Russia 64% of the rows instead of 75%), and (d) writes TSV
# rows of the default category without a category column.
PROFILES = {
    "default": dict(ru_share=RU_SHARE, pool_div=15, zipf_s=1.1, unique=0.0, head_short=0.0,
                    run_step1=1.0, run_step_mean=0.0, omit_identify=False),
    "study": dict(ru_share=20.0, pool_div=8, zipf_s=1.34, unique=0.032, head_short=0.30,
                  run_step1=0.1, run_step_mean=10000.0, omit_identify=True),
}


class Ranges:
    """Weighted number ranges: pick(k) draws k numbers, each range weighted by its weight."""

    def __init__(self, items):
        # items: (base, capacity, weight)
        self.bases = [b for b, _, _ in items]
        self.caps = [c for _, c, _ in items]
        self.cw = list(itertools.accumulate(w for _, _, w in items))
        self.total = self.cw[-1]
        self.idx = range(len(items))

    def pick(self, rng, k):
        bases, caps, rnd = self.bases, self.caps, rng.random
        return [bases[i] + int(rnd() * caps[i]) for i in rng.choices(self.idx, cum_weights=self.cw, k=k)]

    def pick_range(self, rng):
        i = bisect.bisect(self.cw, rng.random() * self.total)
        return self.bases[i], self.caps[i]


def by_capacity(pairs):
    return Ranges([(b, c, c) for b, c in pairs])


def by_kind(kinds):
    items = []
    for kw, pairs in kinds:
        tot = sum(c for _, c in pairs)
        items.extend((b, c, kw * c / tot) for b, c in pairs)
    return Ranges(items)


def load_rossvyaz(data_dir):
    """Return ([(base, cap)] geographic, [(base, cap)] mobile, [town names])."""
    d = os.path.join(data_dir, "rossvyaz")
    files = {"abc": ["raw_Kody_ABC-3kh.csv", "raw_Kody_ABC-8kh.csv"], "def": ["raw_Kody_DEF-9kh.csv"]}
    out = {"abc": [], "def": []}
    towns = {}
    for kind, names in files.items():
        for name in names:
            path = os.path.join(d, name)
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("cp1251")
            except OSError as e:
                sys.exit(f"gen_directory: cannot read {path}: {e.strerror} (use --data DIR)")
            for line in text.splitlines()[1:]:  # header; CRLF or LF
                p = line.split(";")
                if len(p) < 6:
                    continue
                try:
                    code, lo, hi = int(p[0]), int(p[1]), int(p[2])
                except ValueError:
                    continue
                if not (100 <= code <= 999 and 0 <= lo <= hi <= 9999999):
                    continue
                out[kind].append((70000000000 + code * 10000000 + lo, hi - lo + 1))
                if kind == "abc":
                    town = " ".join(p[5].split("|")[0].replace(" - ", "-").split())
                    low = town.lower()
                    if (town and not low.endswith(("ский", "цкий", "ской", "ский район"))
                            and not any(w in low for w in ("област", "край", "республик", "регион", "федерац", "округ", ","))):
                        towns[town] = None
    return out["abc"], out["def"], sorted(towns)


# ----------------------------------------------------------------------------------------
# Labels

def label_makers(towns):
    """Per script: a function rng -> label, and the head (most frequent) labels."""
    def fem(s):
        return s + "а" if s.endswith(("ов", "ев", "ёв", "ин")) else s

    def ru_compound(r):
        p, s = r.choice(RU_PREFIX), r.choice(RU_SUFFIX)
        return p + (s if r.random() < 0.6 else s.lower())

    def ru_name(r):
        return r.choice(RU_WORDS) if r.random() < 0.45 else ru_compound(r)

    def ru_town(r):
        return r.choice(towns) if towns else "Москва"

    def cyr(r):
        x = r.random()
        if x < 0.18:
            q = '"%s"' if r.random() < 0.7 else "«%s»"
            return f"{r.choice(RU_FORMS)} " + q % ru_name(r)
        if x < 0.30:
            if r.random() < 0.7:
                s = r.choice(RU_SURNAMES)
            else:
                s = fem(r.choice(RU_SURNAMES))
            return f"ИП {s} {r.choice(RU_INITIALS)}.{r.choice(RU_INITIALS)}."
        if x < 0.52:
            q = '"%s"' if r.random() < 0.6 else "«%s»"
            s = f"{r.choice(RU_BIZ)} " + q % ru_name(r)
            return s + ", " + ru_town(r) if r.random() < 0.45 else s
        if x < 0.57:
            return f"{r.choice(RU_BIZ)} {ru_town(r)}"
        if x < 0.64:
            p = r.choice(RU_PREFIX)
            b = p + ("кредит" if r.random() < 0.3 else "") + "банк"
            y = r.random()
            if y < 0.4:
                return b
            if y < 0.7:
                return f"{b}, отделение №{r.randint(1, 9999)}"
            return f"{b}, {ru_town(r)}"
        if x < 0.72:
            return f"{r.choice(RU_NUMBERED)} №{r.randint(1, 400)}, {ru_town(r)}"
        if x < 0.84:
            if r.random() < 0.55:
                return f"{r.choice(RU_MALE)} {r.choice(RU_SURNAMES)}"
            return f"{r.choice(RU_FEMALE)} {fem(r.choice(RU_SURNAMES))}"
        if x < 0.91:
            f = r.choice(RU_MALE + RU_FEMALE)
            return f"{f} — {r.choice(RU_TRADES)}" if r.random() < 0.6 else f"{r.choice(RU_TRADES).capitalize()} {f}"
        return f"Супермаркет «{r.choice(RU_WORDS)}» №{r.randint(1, 2000)}"

    def lat(r):
        x = r.random()
        if x < 0.25:
            return f"{r.choice(EN_WORDS)} {r.choice(EN_NOUNS)} {r.choice(EN_LEGAL)}"
        if x < 0.33:
            return f"{r.choice(EN_SURNAMES)} & {r.choice(EN_SURNAMES)} {r.choice(['LLP', 'Associates', 'Rechtsanwälte', 'Avocats'])}"
        if x < 0.39:
            y = r.random()
            if y < 0.4:
                return f"Pizza {r.choice(EN_WORDS + EN_CITIES)}"
            if y < 0.7:
                return f"{r.choice(EN_FIRST)}'s Pizza"
            return f"Pizza {r.choice(EN_FIRST)} {r.choice(EN_CITIES)}"
        if x < 0.45:
            return f"Dr. {r.choice(EN_FIRST)} {r.choice(EN_SURNAMES)}" if r.random() < 0.6 else f"Dr. med. {r.choice(EN_SURNAMES)}"
        if x < 0.65:
            s = f"{r.choice(EN_WORDS)} {r.choice(EN_BIZ)}"
            return f"{s} {r.choice(EN_CITIES)}" if r.random() < 0.4 else s
        if x < 0.73:
            return f"{r.choice(EN_CITIES)} {r.choice(EN_WORDS)} {r.choice(EN_NOUNS)}"
        if x < 0.85:
            return f"{r.choice(EN_FIRST)} {r.choice(EN_SURNAMES)}"
        if x < 0.93:
            return f"{r.choice(EN_WORDS)} Market #{r.randint(1, 3000)}"
        return f"Hotel {r.choice(EN_WORDS)} {r.choice(EN_CITIES)}"

    def ko(r):
        x = r.random()
        w, b = r.choice(KO_WORDS), r.choice(KO_BIZ)
        if x < 0.35:
            return w + b
        if x < 0.55:
            return f"{w}{b} {r.choice(KO_DISTRICTS)}점"
        if x < 0.65:
            return f"(주){w}{r.choice(KO_WORDS)}"
        if x < 0.73:
            return f"{w}은행 {r.choice(KO_DISTRICTS)}지점"
        if x < 0.85:
            return r.choice(KO_SURNAMES) + r.choice(KO_GIVEN)
        if x < 0.95:
            return f"{w}{b} {r.randint(1, 300)}호점"
        return f"{r.choice(KO_DISTRICTS)} {w}{b}"

    return {"cyr": (cyr, RU_HEAD), "lat": (lat, EN_HEAD), "ko": (ko, KO_HEAD)}


def make_pool(rng, make, head, size, taken):
    """size distinct labels (in rank order), none already in `taken`."""
    out = []
    for s in head[:size]:
        if s not in taken:
            taken.add(s)
            out.append(s)
    misses = 0
    while len(out) < size:
        s = make(rng)
        if misses > 50:  # combinations running out: add a branch number
            s = f"{s} #{rng.randint(2, 99999)}"
        if s in taken:
            misses += 1
            continue
        misses = 40 if misses > 50 else 0
        taken.add(s)
        out.append(s)
    return out


# ----------------------------------------------------------------------------------------
# Messy number formatting (used only with --messy)

def split_number(s):
    """(country code, area, [subscriber groups]) for display; s is E.164 digits."""
    if s[0] == "7":
        if s.startswith("77172"):
            return "7", s[1:5], [s[5:7], s[7:9], s[9:]]
        return "7", s[1:4], [s[4:7], s[7:9], s[9:]]
    if s[0] == "1":
        return "1", s[1:4], [s[4:7], s[7:]]
    cc = s[:3] if s[:3] in ("380", "375") else s[:2]
    n = s[len(cc):]
    if cc in ("380", "375"):
        return cc, n[:2], [n[2:5], n[5:7], n[7:]]
    if cc == "82":
        if n.startswith("10"):
            return cc, "10", [n[2:6], n[6:]]
        if n[0] == "2":
            r = n[1:]
            return cc, "2", [r[:-4], r[-4:]]
        if n[:2] in ("15", "16", "18") and len(n) == 8:
            return cc, "", [n[:4], n[4:]]
        r = n[2:]
        return cc, n[:2], [r[:-4], r[-4:]]
    if cc == "44":
        if n[0] == "7":
            return cc, n[:4], [n[4:]]
        if n[:2] == "20":
            return cc, "20", [n[2:6], n[6:]]
        return cc, n[:3], [n[3:6], n[6:]]
    if cc == "49":
        k = 3 if n[:2] in ("15", "16", "17") else 2
        return cc, n[:k], [n[k:]]
    if cc == "33":
        return cc, n[0], [n[i:i + 2] for i in range(1, 9, 2)]
    return cc, n[:3], [n[3:]]


def messy_formatter(rng):
    NB = "\u00a0"
    rnd = rng.random

    def ru(s):
        cc, a, g = split_number(s)
        x = rnd()
        if x < 0.25:
            out = f"+7 {a} {g[0]}-{g[1]}-{g[2]}"
        elif x < 0.45:
            out = f"8 ({a}) {g[0]}-{g[1]}-{g[2]}"
        elif x < 0.55:
            out = "+" + s
        elif x < 0.63:
            out = "8" + s[1:]
        elif x < 0.73:
            out = f"+7 ({a}) {g[0]}-{g[1]}-{g[2]}"
        elif x < 0.78:
            out = f"8 {a} {g[0]} {g[1]} {g[2]}"
        elif x < 0.82:
            out = f"8-{a}-{g[0]}-{g[1]}-{g[2]}"
        elif x < 0.85:
            out = f"+7.{a}.{g[0]}.{g[1]}.{g[2]}" if rnd() < 0.5 else f"7.{a}.{g[0]}.{g[1]}.{g[2]}"
        elif x < 0.90:
            out = f"+7{NB}{a}{NB}{g[0]}-{g[1]}-{g[2]}" if rnd() < 0.6 else f"8{NB}({a}){NB}{g[0]}{NB}{g[1]}{NB}{g[2]}"
        elif x < 0.95:
            out = s
        else:
            out = f"+7 {a} {g[0]}{g[1]}{g[2]}"
        return out

    def intl(s):
        cc, a, g = split_number(s)
        ag = [a] + g if a else g
        x = rnd()
        if x < 0.35:
            out = f"+{cc} {ag[0]}-" + "-".join(ag[1:]) if len(ag) > 1 else f"+{cc} {ag[0]}"
            if cc in ("1", "44", "49", "33") and rnd() < 0.5:
                out = f"+{cc} " + " ".join(ag)
        elif x < 0.47:
            out = f"+{cc} ({a}) " + " ".join(g) if a else f"+{cc} " + "-".join(g)
        elif x < 0.65:
            out = "+" + s
        elif x < 0.72:
            out = f"+{cc}." + ".".join(ag)
        elif x < 0.79:
            out = f"+{cc}{NB}" + NB.join(ag)
        elif x < 0.87:
            out = f"+{cc}-" + "-".join(ag)
        elif x < 0.92 and cc == "49" and a:
            out = f"+49 {a}/" + "".join(g)
        elif x < 0.95 and cc == "1":
            out = f"1 ({a}) {g[0]}-{g[1]}"
        else:
            out = s
        return out

    def invalid(s):
        x = rnd()
        if x < 0.30:  # letters
            y = rnd()
            if y < 0.35:
                return rng.choice(["нет", "n/a", "unknown", "скрыт", "Private", "номер не определён", "-", "?"])
            if y < 0.7:
                t = list("+" + s)
                i = rng.randrange(2, len(t))
                t[i] = {"0": "O", "1": "l", "3": "З", "8": "B"}.get(t[i], "x")
                return "".join(t)
            return "+" + s[:-4] + rng.choice(["ABCD", "CALL", "TAXI", "XXXX"])
        if x < 0.50:  # too long: more than 15 digits
            extra = "".join(rng.choice("0123456789") for _ in range(max(3, 16 - len(s) + rng.randrange(3))))
            return ("+" if rnd() < 0.5 else "") + s + extra
        if x < 0.75:  # spreadsheet scientific notation
            return f"{int(s):.{rng.choice((2, 2, 3, 5))}E}"
        if x < 0.90:  # empty or blank
            return rng.choice(["", "", " ", NB])
        # national/00-prefixed form with a leading zero (not E.164)
        cc, a, g = split_number(s)
        if cc == "7":
            return f"00 7 {a} " + " ".join(g)
        return f"0{a}-" + "-".join(g) if a else f"00{cc} " + " ".join(g)

    def fmt(n):
        s = str(n)
        if rnd() < 0.005:
            return invalid(s), True
        out = ru(s) if s[0] == "7" else intl(s)
        if rnd() < 0.02:
            out = rng.choice([" ", "  ", "\u00a0"]) + out + rng.choice(["", " "])
        return out, False

    return fmt


# ----------------------------------------------------------------------------------------

def apportion(total, shares):
    """Split integer total by shares (largest remainder), deterministic."""
    s = sum(shares)
    raw = [total * x / s for x in shares]
    out = [int(r) for r in raw]
    rest = total - sum(out)
    order = sorted(range(len(shares)), key=lambda i: (out[i] - raw[i], i))
    for i in order[:rest]:
        out[i] += 1
    return out


def zipf_cw(n, s=1.1):
    return list(itertools.accumulate(r ** -s for r in range(1, n + 1)))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Generate a deterministic synthetic caller-ID directory (number, label, category[, weight]).",
        epilog="Same arguments, same bytes. TSV has no header; CSV has one (RFC 4180, CRLF). "
               "Numbers are E.164 digits without '+', unless --messy.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=10000, metavar="N", help="rows to write (default 10000)")
    ap.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default 1)")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="default",
                    help="data profile: 'default' (the original data; same bytes as before profiles "
                         "existed) or 'study' (calibrated to the study of BRIEF.md §4: clustered runs, "
                         "steeper Zipf labels, identify rows without a category column in TSV)")
    ap.add_argument("--format", choices=["tsv", "csv", "json", "jsonl"], default="tsv", help="output format (default tsv)")
    ap.add_argument("-o", "--output", metavar="FILE", help="output file (default stdout)")
    ap.add_argument("--weights", action="store_true", help="add an integer weight column (Zipf-like, heavier for frequent labels)")
    ap.add_argument("--messy", action="store_true",
                    help="write numbers in mixed human formats (+7 913 123-45-67, 8 (913) 123-45-67, NBSP, dots) "
                         "with ~0.5%% invalid numbers (letters, >15 digits, 4.93E+12, empty, leading zero)")
    ap.add_argument("--duplicates", type=float, default=0.0, metavar="P",
                    help="fraction of rows that repeat an earlier number with another label/category (default 0)")
    ap.add_argument("--sorted", action="store_true", help="sort rows by number ascending (default: shuffled)")
    ap.add_argument("--data", metavar="DIR",
                    default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"),
                    help="data directory holding rossvyaz/ (default <script dir>/../../shared/data)")
    a = ap.parse_args(argv)
    if a.entries < 0:
        ap.error("--entries must be >= 0")
    if not 0.0 <= a.duplicates < 1.0:
        ap.error("--duplicates must be in [0, 1)")

    t0 = time.monotonic()
    tty = sys.stderr.isatty()

    def note(msg):
        if tty:
            sys.stderr.write(f"\r\x1b[K{msg}")
            sys.stderr.flush()

    N = a.entries
    prof = PROFILES[a.profile]
    rng = random.Random(a.seed)
    rnd = rng.random

    note("reading numbering plan…")
    abc, mob, towns = load_rossvyaz(a.data)
    ru_all = by_capacity(abc + mob)
    ru_abc, ru_mob = by_capacity(abc), by_capacity(mob)

    # Groups: RU + foreign countries.
    groups = [("RU", prof["ru_share"], RU_SCRIPTS, None)]
    for cc, (share, scripts, kinds) in FOREIGN.items():
        groups.append((cc, share, scripts, by_kind(kinds)))
    g_cw = list(itertools.accumulate(g[1] for g in groups))

    # Label pools (rank order = Zipf rank).
    note("building label pool…")
    pool_size = max(50, N // prof["pool_div"])
    makers = label_makers(towns)
    scripts = ["cyr", "lat", "ko"]
    sizes = apportion(pool_size, [65, 25, 10])
    labels = [""]                       # global label table; 0 = empty label
    rank = [0]                          # Zipf rank within its pool (0: special/empty)
    special = {}                        # (script, category index) -> [label ids]
    sid = {}
    for sc in scripts:
        for ci, cname in enumerate(CATEGORIES[1:], 1):
            ids = []
            for s in SPECIAL[sc][cname]:
                if s not in sid:
                    sid[s] = len(labels)
                    labels.append(s)
                    rank.append(0)
                ids.append(sid[s])
            special[(sc, ci)] = ids
    pools = {}
    taken = set(labels)
    for sc, sz in zip(scripts, sizes):
        make, head = makers[sc]
        lst = make_pool(rng, make, head, max(sz, 1), taken)
        if prof["head_short"]:
            # Frequent labels tend to be short (brands, "Такси", "Spam"); the tail is longer.
            noisy = {s: len(s.encode()) * rng.lognormvariate(0, prof["head_short"]) for s in lst}
            lst.sort(key=noisy.__getitem__)
        start = len(labels)
        labels.extend(lst)
        rank.extend(range(1, len(lst) + 1))
        pools[sc] = (range(start, start + len(lst)), zipf_cw(len(lst), prof["zipf_s"]))
    del sid

    def fresh_label(sc):
        """A label used by this row only (profile option `unique`)."""
        make = makers[sc][0]
        while True:
            s = make(rng)
            if s in taken:
                s = f"{s} #{rng.randint(2, 99999)}"
            if s not in taken:
                taken.add(s)
                labels.append(s)
                rank.append(len(labels))
                return len(labels) - 1

    cat_idx = range(len(CATEGORIES))
    cat_cw = list(itertools.accumulate(CAT_WEIGHTS))
    block_cw = list(itertools.accumulate(BLOCK_WEIGHTS))

    def pick_script(mix):
        if len(mix) == 1:
            return mix[0][0]
        x = rnd()
        for sc, p in mix:
            x -= p
            if x < 0:
                return sc
        return mix[-1][0]

    n_dup = round(N * a.duplicates)
    n_uniq = N - n_dup
    seen = set()
    seen_add = seen.add
    nums, labs, cats = [], [], []

    # 1. Business runs of consecutive numbers.
    note("generating business runs…")
    run_target = round(n_uniq * RUN_SHARE)
    while len(nums) < run_target:
        g = groups[bisect.bisect(g_cw, rnd() * g_cw[-1])]
        if rnd() < 0.85:
            L = 2 + int(rng.expovariate(1 / 5))
        else:
            L = 2 + int(rng.expovariate(1 / 50))
        L = min(L, 200, run_target - len(nums))
        rs = g[3] if g[3] is not None else (ru_abc if rnd() < 0.5 else ru_mob)
        base, cap = rs.pick_range(rng)
        L = min(L, cap)
        gap_mean = min(prof["run_step_mean"], cap / (2 * L))
        if prof["run_step1"] < 1.0 and gap_mean >= 2:
            # A cluster: some members follow the previous one, the others leave a gap.
            steps = [1 if rnd() < prof["run_step1"] else 2 + int(rng.expovariate(1 / gap_mean))
                     for _ in range(L - 1)]
            span = sum(steps) + 1
            if span > cap:
                steps, span = [1] * (L - 1), L
            start = base + int(rnd() * (cap - span + 1))
            members = list(itertools.accumulate(steps, initial=start))
        else:
            start = base + int(rnd() * (cap - L + 1))
            members = range(start, start + L)
        sc = pick_script(g[2])
        ids, cw = pools[sc]
        lab = ids[bisect.bisect(cw, rnd() * cw[-1])]
        cat = bisect.bisect(cat_cw, rnd() * cat_cw[-1])
        if cat and rnd() < SPECIAL_SHARE:
            lab = rng.choice(special[(sc, cat)])
        for x in members:
            if x not in seen:
                seen_add(x)
                nums.append(x)
        k = len(nums) - len(labs)
        labs.extend([lab] * k)
        cats.extend([cat] * k)
    n_runs_rows = len(nums)

    # 2. Scattered numbers, per country group and label script.
    note("generating scattered numbers…")
    counts = apportion(n_uniq - n_runs_rows, [g[1] for g in groups])
    for g, cnt in zip(groups, counts):
        if not cnt:
            continue
        rs = g[3] if g[3] is not None else ru_all
        got = 0
        tries = 0
        while got < cnt:
            tries += 1
            if tries > 50:
                sys.exit(f"gen_directory: cannot find {cnt} distinct numbers for {g[0]}")
            for x in rs.pick(rng, cnt - got + (cnt - got) // 64 + 4):
                if x not in seen:
                    seen_add(x)
                    nums.append(x)
                    got += 1
                    if got == cnt:
                        break
        for (sc, _), k in zip(g[2], apportion(cnt, [p for _, p in g[2]])):
            if not k:
                continue
            ids, cw = pools[sc]
            ls = rng.choices(ids, cum_weights=cw, k=k)
            cs = rng.choices(cat_idx, cum_weights=cat_cw, k=k)
            for i, c in enumerate(cs):
                if c and rnd() < SPECIAL_SHARE:
                    ls[i] = rng.choice(special[(sc, c)])
            if prof["unique"]:
                for i in range(k):
                    if rnd() < prof["unique"]:
                        ls[i] = fresh_label(sc)
            labs.extend(ls)
            cats.extend(cs)

    del taken

    # 3. Empty labels (1% of all rows, scattered rows only), always a blocking category.
    n_empty = min(round(N * 0.01), n_uniq - n_runs_rows)
    for i in rng.sample(range(n_runs_rows, n_uniq), n_empty):
        labs[i] = 0
        cats[i] = bisect.bisect(block_cw, rnd() * block_cw[-1])

    # 4. Duplicates: an existing number again, with a conflicting label or category.
    if n_dup:
        for j in rng.choices(range(n_uniq), k=n_dup):
            x = nums[j]
            sc = "cyr" if x // 10 ** 10 == 7 else ("ko" if str(x).startswith("82") else "lat")
            if rnd() < 0.5:
                lab, cat = labs[j], bisect.bisect(cat_cw, rnd() * cat_cw[-1])
            else:
                ids, cw = pools[sc]
                lab, cat = ids[bisect.bisect(cw, rnd() * cw[-1])], bisect.bisect(cat_cw, rnd() * cat_cw[-1])
            if lab == 0:
                cat = bisect.bisect(block_cw, rnd() * block_cw[-1])
            nums.append(x)
            labs.append(lab)
            cats.append(cat)

    # 5. Weights (own generator so --weights changes nothing else).
    if a.weights:
        wr = random.Random(a.seed * 1000003 + 17)
        wrnd, pareto = wr.random, wr.paretovariate
        base = [max(1, int(5000 * r ** -1.1)) if r else 0 for r in rank]
        weights = [int(base[l] * (0.75 + 0.5 * wrnd())) + int(pareto(1.5)) for l in labs]
        rows = list(zip(nums, labs, cats, weights))
    else:
        rows = list(zip(nums, labs, cats))
    del nums, labs, cats, seen

    note("ordering…")
    if a.sorted:
        rows.sort()
    else:
        rng.shuffle(rows)

    # 6. Output.
    distinct = len({r[1] for r in rows} - {0})
    if a.output:
        out = open(a.output, "wb")
    else:
        out = sys.stdout.buffer
    fmt = messy_formatter(random.Random(a.seed * 1000003 + 29)) if a.messy else None
    n_invalid = 0
    W = a.weights
    CH = 200000
    total = len(rows)
    f = a.format
    if f in ("json", "jsonl"):
        esc = [json.dumps(s, ensure_ascii=False) for s in labels]
    else:
        esc = labels
    cq = [f'"{c}"' for c in CATEGORIES] if f in ("json", "jsonl") else CATEGORIES
    try:
        if f == "csv":
            out.write(("number,label,category,weight\r\n" if W else "number,label,category\r\n").encode())
        elif f == "json":
            out.write(b"[\n" if total else b"[")
        for off in range(0, total, CH):
            chunk = rows[off:off + CH]
            if fmt is not None:
                ms = []
                for r in chunk:
                    s, bad = fmt(r[0])
                    ms.append(s)
                    n_invalid += bad
            else:
                ms = [str(r[0]) for r in chunk]
            if f == "tsv" and prof["omit_identify"] and not W:
                cn = [""] + ["\t" + c for c in CATEGORIES[1:]]
                text = "".join([f"{m}\t{labels[l]}{cn[c]}\n" for m, (_, l, c) in zip(ms, chunk)])
            elif f == "tsv":
                if W:
                    text = "".join([f"{m}\t{labels[l]}\t{CATEGORIES[c]}\t{w}\n" for m, (_, l, c, w) in zip(ms, chunk)])
                else:
                    text = "".join([f"{m}\t{labels[l]}\t{CATEGORIES[c]}\n" for m, (_, l, c) in zip(ms, chunk)])
            elif f == "csv":
                buf = io.StringIO()
                wtr = csv.writer(buf, lineterminator="\r\n")
                if W:
                    wtr.writerows([(m, labels[l], CATEGORIES[c], w) for m, (_, l, c, w) in zip(ms, chunk)])
                else:
                    wtr.writerows([(m, labels[l], CATEGORIES[c]) for m, (_, l, c) in zip(ms, chunk)])
                text = buf.getvalue()
            else:
                if fmt is not None:
                    ms = [json.dumps(m, ensure_ascii=False) for m in ms]
                else:
                    ms = [f'"{m}"' for m in ms]
                if f == "jsonl":
                    if W:
                        text = "".join([f'{{"number":{m},"label":{esc[l]},"category":{cq[c]},"weight":{w}}}\n'
                                        for m, (_, l, c, w) in zip(ms, chunk)])
                    else:
                        text = "".join([f'{{"number":{m},"label":{esc[l]},"category":{cq[c]}}}\n'
                                        for m, (_, l, c) in zip(ms, chunk)])
                else:
                    if W:
                        objs = [f'{{"number":{m},"label":{esc[l]},"category":{cq[c]},"weight":{w}}}'
                                for m, (_, l, c, w) in zip(ms, chunk)]
                    else:
                        objs = [f'{{"number":{m},"label":{esc[l]},"category":{cq[c]}}}'
                                for m, (_, l, c) in zip(ms, chunk)]
                    text = ("" if off == 0 else ",\n") + ",\n".join(objs)
            out.write(text.encode("utf-8"))
            note(f"writing… {min(off + CH, total) * 100 // max(total, 1)}%")
        if f == "json":
            out.write(b"\n]\n" if total else b"]\n")
        out.flush()
    except BrokenPipeError:
        # Reader went away (e.g. `| head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        if a.output:
            out.close()
    note("")
    if tty:
        sys.stderr.write("\r\x1b[K")
    extra = f", {n_invalid} invalid numbers" if a.messy else ""
    sys.stderr.write(f"gen_directory: {total} rows, {distinct} distinct labels{extra}, "
                     f"{time.monotonic() - t0:.1f} s -> {a.output or 'stdout'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
