"""How reverie holds up as one user's memory grows: ingest, learning, recall, size and memory.

    report = run_scale([10_000, 100_000], cache="~/.cache/reverie-bench/scale", recalls=300)
    report.as_dict()["sizes"][0]["recall_ms"]["p95"]

For each size a synthetic store is built once and cached (``<cache>/episodes-<N>/``):
one user, :data:`USER`, whose episodes are conversation turns between several
speakers, in many threads, dated over six years (:class:`ConversationGenerator`:
seeded, deterministic, never one text twice). The turns go in through the public
API, ``Memory.add(..., group="exchange")`` one session at a time and
``Memory.flush()`` after every ~1,000 messages, so that what is timed is add +
learn with the heuristic engine. A build writes :data:`MARKER` only when it has
finished; a home without it is an interrupted build and is built again, a home
with it is reused and its build figures are read back from the marker.

Then, per size: recall latency percentiles over varied queries (about half about
things the store holds) at budget 500 with ``explain`` off and ``track=False``,
timed in a child process that also reports its peak RSS; the first recall of a
fresh process; the size of the home on disk. Last, the dilution check: each
LoCoMo conversation's evidence recall at 500 tokens in an empty store beside the
same conversation ingested into a copy of the largest built store (same user).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from itertools import accumulate
from pathlib import Path
from typing import Any

from reverie.bench.child import finish_child, run_child, start_child
from reverie.bench.locomo import CaseRecall, LocomoCase, ask_case, ingest_case, run_case
from reverie.bench.machine import MachineReference, machine_reference
from reverie.bench.serve import against_first, run_serve_bench
from reverie.bench.stats import percentile
from reverie.bench.targets import targets
from reverie.errors import InvalidInput
from reverie.memory import Memory
from reverie.migrate import migrate_home
from reverie.store.postgres import EXTRA, is_postgres_url, scratch_schema, split_schema, with_schema
from reverie.text import load_dictionaries
from reverie.version import __version__

__all__ = [
    "BATCH_MESSAGES",
    "DEFAULT_CACHE",
    "MARKER",
    "SIZES",
    "USER",
    "BuildRecord",
    "ConversationGenerator",
    "DilutionRow",
    "ScaleReport",
    "Session",
    "SizeReport",
    "build_store",
    "cached_build",
    "dilution",
    "disk_bytes",
    "measure_size",
    "recall_queries",
    "run_scale",
    "warmup_queries",
]

SIZES = (10_000, 100_000)
DEFAULT_CACHE = Path("~/.cache/reverie-bench/scale")
USER = "scale"
SEED = 11
GENERATOR = 1  # bump when the generator's output changes: cached stores of another version are rebuilt
MARKER = "bench-build.json"
OTHER_EPISODES = 1000  # each of the ``others`` users of a shared store (issue 14: 800 users with 1k each)
OTHER_PREFIX = "other-"
BATCH_MESSAGES = 1000  # messages added (one add call per session) between two flushes
BUDGET = 500
TAIL = 0.10  # "learning with the store nearly full": the batches of the last 10% of the build
KNOWN_SAMPLE = 2000  # mentions kept (reservoir) to ask about things the store holds
# the recalls that warm a size's recall-only process before the timed ones: as many, drawn
# from another seed (other queries, so no query finds its own words counted already). A
# 1M store is 6 GB on SQLite; a server that has run a while holds its hot pages in the page
# cache, and without this the timed p95 measured whatever the last command left there (after
# the PostgreSQL copy or a dropped cache 90-102 ms, after one warm pass 54-58 ms). The
# warm-up's own times are reported too: recall as the process found the page cache.
WARMUP_SEED_OFFSET = 1000
ENGINE = "heuristic"

# ---------------------------------------------------------------------------- vocabulary
# The speakers of the user's conversations, and everyone and everything they talk about.
# The names of the shared LoCoMo speakers (Caroline, Melanie, Jon, Gina, John, Maria) are
# left out, so that the dilution check measures volume, not a clash of names.

SPEAKERS = ("Maya", "Tomas", "Aiko", "Farid", "Lena", "Jonah", "Priya", "Diego", "Noor", "Elias")
FIRST_NAMES = (
    "Ada", "Adrian", "Alba", "Aleksei", "Amara", "Anders", "Anouk", "Arjun", "Astrid", "Aurelio", "Ayla", "Basil",
    "Beatriz", "Benedikt", "Bianca", "Bodhi", "Camille", "Cyrus", "Dagny", "Dalia", "Dario", "Delphine", "Dmitri",
    "Ebba", "Edmund", "Eitan", "Elodie", "Emeka", "Esme", "Ezra", "Fatima", "Felix", "Fiona", "Florin", "Freya",
    "Gaspard", "Greta", "Hamza", "Hana", "Harriet", "Hugo", "Ilse", "Imani", "Ines", "Ivo", "Jasper", "Joaquin",
    "Juno", "Kaito", "Kalani", "Karim", "Kasia", "Keanu", "Kiran", "Lars", "Leila", "Linnea", "Lorenzo", "Lucia",
    "Magnus", "Malik", "Marisol", "Matteo", "Mei", "Milo", "Mira", "Nadia", "Nico", "Nils", "Odette", "Olek",
    "Oona", "Orla", "Otto", "Pablo", "Paloma", "Pietro", "Quentin", "Rafael", "Rania", "Reza", "Rosalind", "Rohan",
    "Ruth", "Sabine", "Samir", "Sanne", "Selin", "Soren", "Sunita", "Tariq", "Thea", "Theo", "Tove", "Ulla",
    "Umar", "Valentin", "Vera", "Viktor", "Wanda", "Wendell", "Xenia", "Yara", "Yusuf", "Zainab", "Zeno", "Zofia",
)
SURNAMES = (
    "Abbott", "Achebe", "Albrecht", "Alvarez", "Bakker", "Barros", "Bergstrom", "Bianchi", "Brennan", "Castillo",
    "Chowdhury", "Costa", "Dahl", "Delgado", "Dubois", "Eriksen", "Falk", "Ferreira", "Fischer", "Gallagher",
    "Garnier", "Haddad", "Halvorsen", "Hartmann", "Ibarra", "Ivanova", "Jansen", "Jovanovic", "Kaplan", "Kowalski",
    "Kruger", "Laine", "Lindqvist", "Lombardi", "Mahler", "Marchetti", "Moreau", "Nakamura", "Navarro", "Novak",
    "Oduya", "Okafor", "Olsen", "Pereira", "Petrov", "Quinn", "Rahman", "Reyes", "Rossi", "Sandoval", "Schneider",
    "Silva", "Sorensen", "Takeda", "Tanaka", "Toivonen", "Urquhart", "Vance", "Varga", "Vasquez", "Weber",
    "Whitfield", "Yilmaz", "Zamora", "Zielinski",
)
CITIES = (
    "Lisbon", "Porto", "Seville", "Valencia", "Bilbao", "Lyon", "Marseille", "Bordeaux", "Ghent", "Utrecht",
    "Rotterdam", "Hamburg", "Leipzig", "Munich", "Vienna", "Graz", "Ljubljana", "Zagreb", "Split", "Budapest",
    "Krakow", "Gdansk", "Prague", "Brno", "Tallinn", "Riga", "Vilnius", "Helsinki", "Bergen", "Trondheim",
    "Gothenburg", "Malmo", "Aarhus", "Copenhagen", "Edinburgh", "Glasgow", "Galway", "Cork", "Bristol", "Leeds",
    "Naples", "Bologna", "Turin", "Palermo", "Genoa", "Athens", "Thessaloniki", "Istanbul", "Izmir", "Tbilisi",
    "Marrakesh", "Tunis", "Cairo", "Nairobi", "Accra", "Lagos", "Cape Town", "Durban", "Mumbai", "Pune",
    "Kochi", "Jaipur", "Kathmandu", "Colombo", "Hanoi", "Hoi An", "Chiang Mai", "Penang", "Kyoto", "Osaka",
    "Sapporo", "Busan", "Taipei", "Manila", "Cebu", "Perth", "Hobart", "Wellington", "Queenstown", "Vancouver",
    "Montreal", "Quebec City", "Halifax", "Portland", "Seattle", "Denver", "Austin", "Savannah", "Chicago",
    "Oaxaca", "Merida", "Cusco", "Valparaiso", "Cartagena", "Medellin", "Montevideo", "Salvador", "Recife",
)
LANDMARKS = (
    "old harbor", "botanical garden", "river path", "lighthouse", "flea market", "city library", "train station",
    "night market", "castle hill", "sculpture park", "rose garden", "fish market", "old town square", "ferry pier",
    "observatory", "cathedral", "climbing gym", "public pool", "skate park", "community garden", "canal",
    "covered bridge", "pine forest", "sand dunes", "waterfall trail", "tea house", "record store", "jazz club",
)
VENUE_WORDS = (
    "Copper", "Silver", "Blue", "Crooked", "Hidden", "Little", "Golden", "Salty", "Lazy", "Wild", "Green",
    "Velvet", "Rusty", "Quiet", "Lucky", "Painted", "Northern", "Sunny", "Brass", "Amber",
)
VENUE_NOUNS = (
    "Fox", "Heron", "Lantern", "Anchor", "Fig", "Otter", "Kettle", "Sparrow", "Olive", "Compass", "Pelican",
    "Juniper", "Walrus", "Pepper", "Moth", "Badger", "Clover", "Harbor", "Lemon", "Raven",
)
VENUE_KINDS = ("cafe", "bistro", "bakery", "taqueria", "ramen bar", "wine bar", "diner", "noodle shop",
               "tea room", "brewery", "pizzeria", "food truck", "deli", "tapas bar", "dumpling house")
# (-ing form, past tense phrase, plain form)
ACTIVITIES = (
    ("hiking", "went hiking", "go hiking"), ("kayaking", "went kayaking", "go kayaking"),
    ("bouldering", "went bouldering", "go bouldering"), ("surfing", "went surfing", "go surfing"),
    ("sailing", "went sailing", "go sailing"), ("camping", "went camping", "go camping"),
    ("cycling", "went cycling", "go cycling"), ("running", "went running", "go running"),
    ("swimming", "went swimming", "go swimming"), ("skiing", "went skiing", "go skiing"),
    ("birdwatching", "went birdwatching", "go birdwatching"), ("fishing", "went fishing", "go fishing"),
    ("pottery", "took a pottery class", "take a pottery class"), ("painting", "painted a landscape", "paint"),
    ("baking", "baked all afternoon", "bake"), ("gardening", "worked in the garden", "do some gardening"),
    ("knitting", "knitted a scarf", "knit"), ("woodworking", "built a small shelf", "do woodworking"),
    ("photography", "took photos all day", "take photos"), ("yoga", "did a long yoga session", "do yoga"),
    ("salsa dancing", "went salsa dancing", "go salsa dancing"), ("tango", "danced tango", "dance tango"),
    ("chess", "played chess", "play chess"), ("board games", "played board games", "play board games"),
    ("volleyball", "played volleyball", "play volleyball"), ("tennis", "played tennis", "play tennis"),
    ("badminton", "played badminton", "play badminton"), ("table tennis", "played table tennis", "play table tennis"),
    ("rowing", "went rowing", "go rowing"), ("stargazing", "went stargazing", "go stargazing"),
    ("foraging", "went foraging for mushrooms", "go foraging"), ("journaling", "journaled for an hour", "journal"),
    ("calligraphy", "practised calligraphy", "practise calligraphy"), ("the violin", "practised the violin", "practise the violin"),
    ("the cello", "played the cello", "play the cello"), ("the drums", "played the drums", "play the drums"),
    ("guitar", "played guitar", "play guitar"), ("singing in a choir", "sang with the choir", "sing in the choir"),
    ("volunteering", "volunteered at the shelter", "volunteer at the shelter"), ("scuba diving", "went scuba diving", "go scuba diving"),
    ("snorkeling", "went snorkeling", "go snorkeling"), ("ice skating", "went ice skating", "go ice skating"),
    ("roller skating", "went roller skating", "go roller skating"), ("archery", "tried archery", "try archery"),
    ("fencing", "went to fencing practice", "go to fencing practice"), ("karate", "went to karate", "go to karate"),
    ("quilting", "worked on the quilt", "work on the quilt"), ("beekeeping", "checked the beehives", "check the beehives"),
    ("trail running", "went trail running", "go trail running"), ("paddleboarding", "went paddleboarding", "go paddleboarding"),
)
FOODS = (
    "ramen", "pho", "bibimbap", "paella", "risotto", "gnocchi", "lasagna", "moussaka", "falafel", "shakshuka",
    "tagine", "couscous", "jollof rice", "injera", "biryani", "dosa", "butter chicken", "dal makhani", "pad thai",
    "green curry", "laksa", "bao buns", "dumplings", "mapo tofu", "sushi", "okonomiyaki", "tempura", "udon",
    "tacos al pastor", "enchiladas", "mole", "ceviche", "empanadas", "arepas", "feijoada", "pierogi", "goulash",
    "borscht", "schnitzel", "fondue", "raclette", "crepes", "galettes", "bouillabaisse", "fish and chips",
    "shepherd's pie", "clam chowder", "gumbo", "brisket", "cornbread", "banana bread", "sourdough", "focaccia",
    "cinnamon rolls", "baklava", "tiramisu", "cheesecake", "pavlova", "churros", "gelato", "mochi", "lemon tart",
    "apple pie", "carrot cake", "pumpkin soup", "minestrone", "lentil stew", "mushroom pie", "halloumi salad",
    "poke bowl", "kimchi fried rice", "bulgogi", "katsu curry", "samosas", "pav bhaji", "khachapuri", "pelmeni",
)
THINGS = (
    "bike", "tent", "camera", "record player", "standing desk", "sewing machine", "telescope", "kayak paddle",
    "espresso machine", "bread maker", "rice cooker", "easel", "drone", "e-reader", "mechanical keyboard",
    "hiking boots", "rain jacket", "sleeping bag", "wetsuit", "yoga mat", "pottery wheel", "synthesizer",
    "projector", "bookshelf", "armchair", "houseplant", "cast iron pan", "air fryer", "electric scooter",
    "violin bow", "watercolor set", "film camera", "backpack", "road bike helmet", "snowboard", "chess set",
    "tea set", "bird feeder", "hammock", "label maker",
)
PETS = (("dog", "went on a long walk by the river"), ("puppy", "chewed up a shoe"), ("cat", "knocked a plant off the shelf"),
        ("kitten", "climbed the curtains"), ("rabbit", "escaped from the garden"), ("parrot", "learned a new word"),
        ("tortoise", "came out of hibernation"), ("hamster", "built a nest in the sock drawer"))
PET_NAMES = (
    "Biscuit", "Pepper", "Mochi", "Waffles", "Juniper", "Pickles", "Nutmeg", "Ziggy", "Pumpkin", "Luna", "Bruno",
    "Tofu", "Olive", "Maple", "Chester", "Noodle", "Clementine", "Basil", "Dumpling", "Pixel",
)
ROLES = ("colleague", "neighbor", "cousin", "mentor", "roommate", "best friend", "manager", "teammate", "sister",
         "brother", "aunt", "uncle", "landlord", "coach", "old classmate")
JOBS = (
    "nurse", "architect", "data analyst", "carpenter", "teacher", "translator", "sound engineer", "pharmacist",
    "park ranger", "baker", "graphic designer", "paramedic", "librarian", "urban planner", "veterinarian",
    "electrician", "journalist", "chef", "marine biologist", "physiotherapist", "museum curator", "pilot",
)
COMPANY_A = ("North", "Bright", "Tidal", "Maple", "Granite", "Harbor", "Lumen", "Cedar", "Orbit", "Kestrel",
             "Meadow", "Beacon", "Summit", "Pioneer", "Willow")
COMPANY_B = ("Labs", "Works", "Studio", "Logistics", "Health", "Foods", "Analytics", "Press", "Energy", "Robotics",
             "Design", "Clinic")
PROJECTS = ("the new booking system", "the spring catalogue", "the clinic renovation", "the school garden",
            "the podcast", "the museum exhibit", "the community fridge", "the mobile app", "the bridge survey",
            "the charity run", "the winter fair", "the recipe book", "the bike lane proposal", "the annual report")
TITLE_ADJ = ("Silent", "Last", "Hidden", "Burning", "Glass", "Hollow", "Lost", "Winter", "Paper", "Iron", "Velvet",
             "Distant", "Crimson", "Quiet", "Northern", "Broken", "Golden", "Endless", "Salt", "Midnight")
TITLE_NOUN = ("Orchard", "Harbor", "Garden", "Archive", "Lantern", "River", "Kingdom", "Cartographer", "Island",
              "Lighthouse", "Clockmaker", "Mountain", "Letters", "Tide", "Forest", "Machine", "Summer", "Bridge")
MEDIA = ("book", "novel", "film", "documentary", "podcast series", "graphic novel", "play", "album")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WHEN = ("last weekend", "yesterday", "on Saturday", "last week", "two weeks ago", "this morning", "last night",
        "over the holidays", "on my day off", "last month", "a few days ago", "on Sunday afternoon")
ADJ_GOOD = ("amazing", "so relaxing", "really fun", "wonderful", "a bit chaotic but great", "unforgettable",
            "exhausting but worth it", "lovely", "surprisingly good", "the highlight of my month")
ADJ_BAD = ("a bit disappointing", "way too crowded", "freezing", "stressful", "rained out", "more expensive than expected")
REACTIONS = ("That sounds great", "No way", "Oh nice", "Wow", "Ha, classic", "That's wonderful", "Oh no",
             "Congrats", "I'm jealous", "Love that", "Sounds perfect", "That's so cool", "Ugh, sorry to hear that",
             "Good for you", "How exciting", "Oh, I remember that")
FEELINGS = ("happy", "tired", "proud", "nervous", "grateful", "relieved", "restless", "inspired", "homesick", "calm")
WEATHER = ("it poured the whole time", "the weather was perfect", "it was windy but sunny", "it snowed a little",
           "it was incredibly hot", "there was fog all morning")
CATEGORIES = (("season", ("autumn", "spring", "early summer", "late winter")),
              ("color", ("teal", "mustard yellow", "deep green", "burgundy", "navy")),
              ("board game", ("Catan", "Carcassonne", "Azul", "Wingspan", "Ticket to Ride")),
              ("breakfast", ("porridge with berries", "eggs on toast", "miso soup", "pancakes", "yogurt and granola")),
              ("holiday spot", CITIES[:30]), ("dish", FOODS[:40]), ("hobby", tuple(a[0] for a in ACTIVITIES[:30])))
NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "fifteen", "twenty")
# words the store never holds: queries about them find nothing that matches exactly
ABSENT = ("ukulele", "origami", "falconry", "curling", "zeppelin", "saxophone", "hot air balloon", "glassblowing",
          "taxidermy", "marmalade", "pickleball", "lacrosse", "terrarium", "harpsichord", "paragliding", "bonsai",
          "sauerkraut", "kombucha", "polo", "axe throwing")
GENERIC_QUERIES = (
    "What should I cook this weekend?", "Any ideas for a short trip next month?", "What was I stressed about lately?",
    "Who did I meet recently?", "What are my hobbies?", "What do I usually eat for breakfast?",
    "What did we decide last time?", "Remind me what I was planning for the summer.",
    "What kind of books do I like?", "How have I been feeling this year?", "What gifts have I bought for friends?",
    "Where did I travel in the past few years?", "What am I working on at the moment?",
    "Which restaurants did I like?", "What pets do my friends have?", "What goals did I set for myself?",
)


# ---------------------------------------------------------------------------- the generator


@dataclass
class Session:
    """One sitting of a thread: its messages (``speaker``, ``content``, ``at``) and how many
    exchanges (episodes, with ``group="exchange"``) they make."""

    thread: str
    messages: list[dict[str, Any]]
    exchanges: int


@dataclass
class _Thread:
    name: str
    people: tuple[str, ...]


class ConversationGenerator:
    """Seeded, deterministic conversation: sessions of exchanges between the user's speakers.

    Every session belongs to a thread (a chat between two or three speakers, continued over
    many sessions); its first speaker opens each exchange and one to three replies follow,
    so ``group="exchange"`` makes one episode per exchange. Dates run from 2019 to the end of
    2024 whatever the size. Messages are drawn from word lists and templates with one to
    five sentences; a text drawn before is drawn again, so no text ever repeats.
    ``mentions`` keeps a seeded sample of what messages named (speaker, person, place, ...)
    for queries about things the store holds.
    """

    START = datetime(2019, 1, 1, 9, 0, tzinfo=timezone.utc)
    END = datetime(2024, 12, 31, 21, 0, tzinfo=timezone.utc)
    EXCHANGES = (1, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10, 12, 14)  # per session, drawn evenly

    def __init__(self, episodes: int, *, seed: int = SEED, sample: int = KNOWN_SAMPLE):
        if episodes <= 0:
            raise InvalidInput("episodes must be positive", field="episodes")
        self.episodes = episodes
        self.rng = random.Random(seed)
        self._sampler = random.Random(seed + 1)
        self._sample_size = sample
        self.mentions: list[dict[str, str]] = []
        self._mentions_seen = 0
        self._seen: set[int] = set()
        self._threads: list[_Thread] = []
        self._thread_counts: dict[tuple[str, ...], int] = {}
        self._gap = (self.END - self.START) / (episodes * len(self.EXCHANGES) / sum(self.EXCHANGES))
        self._clock = self._last = self.START
        self.redraws = 0
        self.messages = 0

    # ------------------------------------------------------------ sessions
    def sessions(self) -> Iterator[Session]:
        made = 0
        while made < self.episodes:
            session = self._session(self.episodes - made)
            made += session.exchanges
            yield session

    def _session(self, left: int) -> Session:
        rng = self.rng
        thread = self._thread()
        opener = rng.choice(thread.people)
        others = [p for p in thread.people if p != opener]
        self._clock += self._gap * rng.expovariate(1.0)
        start = self._clock.replace(hour=rng.randint(7, 22), minute=rng.randint(0, 59), second=0, microsecond=0)
        at = max(start, self._last + timedelta(minutes=30))  # sessions never overlap
        exchanges = min(left, rng.choice(self.EXCHANGES))
        messages: list[dict[str, Any]] = []
        for _ in range(exchanges):
            for speaker, opening in [(opener, True)] + [
                (rng.choice(others), False) for _ in range(rng.choice((1, 1, 1, 2, 2, 3)))
            ]:
                at += timedelta(minutes=rng.randint(1, 14), seconds=rng.randint(0, 59))
                addressee = rng.choice(others) if opening else opener
                messages.append({"speaker": speaker, "content": self._message(speaker, addressee, opening), "at": at})
        self._last = at
        return Session(thread.name, messages, exchanges)

    def _thread(self) -> _Thread:
        rng = self.rng
        if not self._threads or rng.random() < 0.25:
            people = tuple(sorted(rng.sample(SPEAKERS, 3 if rng.random() < 0.2 else 2)))
            count = self._thread_counts[people] = self._thread_counts.get(people, 0) + 1
            thread = _Thread(f"{'-'.join(p.lower() for p in people)}-{count}", people)
            self._threads.append(thread)
            return thread
        return rng.choice(self._threads[-60:])

    # ------------------------------------------------------------ messages
    def _message(self, speaker: str, addressee: str, opening: bool) -> str:
        while True:
            mention: dict[str, str] = {"speaker": speaker}
            text = self._compose(speaker, addressee, opening, mention)
            key = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")
            if key not in self._seen:
                self._seen.add(key)
                self.messages += 1
                self._keep(mention)
                return text
            self.redraws += 1

    def _keep(self, mention: dict[str, str]) -> None:
        """Reservoir sample of mentions that name something besides the speaker."""
        if len(mention) < 2:
            return
        self._mentions_seen += 1
        if len(self.mentions) < self._sample_size:
            self.mentions.append(mention)
            return
        slot = self._sampler.randrange(self._mentions_seen)
        if slot < self._sample_size:
            self.mentions[slot] = mention

    def _compose(self, speaker: str, addressee: str, opening: bool, mention: dict[str, str]) -> str:
        rng = self.rng
        kinds, weights = (_OPENERS, _OPENER_WEIGHTS) if opening else (_REPLIES, _REPLY_WEIGHTS)
        main = rng.choices(kinds, cum_weights=weights)[0](self, addressee, mention)
        parts = [main]
        for extra in rng.sample(_EXTRAS, rng.choice((0, 0, 0, 1, 1, 1, 2, 2, 3, 4))):
            parts.append(extra(self, addressee, mention))
        if rng.random() < 0.15:
            parts.insert(0, f"{rng.choice(('Hey', 'Hi', 'Morning', 'Evening', 'So'))} {addressee}!")
        return " ".join(parts)

    # slot drawers: each records what it drew in ``mention``
    def person(self, mention: dict[str, str]) -> str:
        name = f"{self.rng.choice(FIRST_NAMES)} {self.rng.choice(SURNAMES)}"
        mention.setdefault("person", name)
        return name

    def first_name(self, mention: dict[str, str]) -> str:
        name = self.rng.choice(FIRST_NAMES)
        mention.setdefault("person", name)
        return name

    def city(self, mention: dict[str, str]) -> str:
        city = self.rng.choice(CITIES)
        mention.setdefault("place", city)
        return city

    def venue(self, mention: dict[str, str]) -> str:
        venue = f"the {self.rng.choice(VENUE_WORDS)} {self.rng.choice(VENUE_NOUNS)} {self.rng.choice(VENUE_KINDS)}"
        mention.setdefault("venue", venue)
        return venue

    def activity(self, mention: dict[str, str]) -> tuple[str, str, str]:
        act = self.rng.choice(ACTIVITIES)
        mention.setdefault("activity", act[0])
        return act

    def food(self, mention: dict[str, str]) -> str:
        food = self.rng.choice(FOODS)
        mention.setdefault("food", food)
        return food

    def thing(self, mention: dict[str, str]) -> str:
        thing = self.rng.choice(THINGS)
        mention.setdefault("thing", thing)
        return thing

    def title(self, mention: dict[str, str]) -> str:
        title = f"The {self.rng.choice(TITLE_ADJ)} {self.rng.choice(TITLE_NOUN)}"
        mention.setdefault("title", title)
        return title

    def when(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.55:
            return rng.choice(WHEN)
        if pick < 0.8:
            return f"on {rng.randint(1, 28)} {rng.choice(MONTHS)}"
        return f"back in {rng.choice(MONTHS)}"

    def number(self, low: int = 2, high: int = 60) -> int:
        return self.rng.randint(low, high)


Composer = Callable[[ConversationGenerator, str, dict[str, str]], str]


def _news_trip(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    act = g.activity(m)
    return f"Guess what, I {act[1]} in {g.city(m)} {g.when()} with {g.person(m)}, it was {g.rng.choice(ADJ_GOOD)}."


def _ask_trip(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    return f"How was {g.city(m)}, {to}? Did you get to {g.activity(m)[2]} near the {g.rng.choice(LANDMARKS)}?"


def _recommend(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    return (f"Have you been to {g.venue(m)} in {g.city(m)}? Their {g.food(m)} is the best I've had in "
            f"{g.rng.choice(NUMBER_WORDS)} years.")


def _plan(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    act = g.activity(m)
    return _one(
        rng,
        lambda: f"I'm planning to {act[2]} in {g.city(m)} in {rng.choice(MONTHS)}, want to join?",
        lambda: f"We plan to {act[2]} with {g.person(m)} on {rng.choice(WEEKDAYS)}, {g.number(2, 9)} of us so far.",
        lambda: f"I'm saving up for a trip to {g.city(m)} so I can {act[2]} there.",
    )


def _preference(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    pick = rng.randrange(5)
    if pick == 0:
        return f"I really love {g.activity(m)[0]} lately, it clears my head after work."
    if pick == 1:
        return f"I can't stand {g.food(m)} with too much salt, but the one {g.person(m)} makes is perfect."
    if pick == 2:
        category, options = rng.choice(CATEGORIES)
        item = rng.choice(options)
        m.setdefault("favorite", f"{category}: {item}")
        return f"My favorite {category} is {item}, {rng.choice(('no contest', 'always has been', 'at least this year', 'ask anyone'))}."
    if pick == 3:
        return f"I prefer {g.food(m)} over {rng.choice(FOODS)} any day, especially from {g.venue(m)}."
    return f"I'm a huge fan of {g.title(m)}, I've read it {rng.choice(NUMBER_WORDS)} times."


def _person_news(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    who = g.person(m)
    first = who.split()[0]
    return _one(
        rng,
        lambda: f"{first} is my {rng.choice(ROLES)}, and she just moved to {g.city(m)} to work as {_a(rng.choice(JOBS))}.",
        lambda: f"My {rng.choice(ROLES)} {who} turned {g.number(20, 80)} {g.when()}, we had {g.food(m)} to celebrate.",
        lambda: f"Ran into {who} at the {rng.choice(LANDMARKS)} {g.when()}, they're starting at {_company(g)} next month.",
    )


def _company(g: ConversationGenerator) -> str:
    return f"{g.rng.choice(COMPANY_A)} {g.rng.choice(COMPANY_B)}"


def _purchase(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"I finally bought {_a(g.thing(m))} for {g.number(15, 900)} euros at a shop in {g.city(m)}.",
        lambda: f"My new {g.thing(m)} arrived {g.when()}, {rng.choice(('already obsessed', 'not sure it was worth it', 'works great so far'))}.",
        lambda: f"Selling my old {g.thing(m)} to {g.first_name(m)} for {g.number(10, 300)} dollars.",
    )


def _work(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    project = rng.choice(PROJECTS)
    m.setdefault("project", project)
    return _one(
        rng,
        lambda: f"Work at {_company(g)} has been {rng.choice(ADJ_GOOD + ADJ_BAD)}; we shipped {project} {g.when()}.",
        lambda: f"I work as {_a(rng.choice(JOBS))} at {_company(g)} now, mostly on {project}.",
        lambda: f"We decided to postpone {project} until {rng.choice(MONTHS)}, {g.person(m)} needs more time.",
        lambda: f"Spent {g.number(2, 11)} hours on {project} today with {g.first_name(m)}, I'm {rng.choice(FEELINGS)}.",
    )


def _media(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    kind = rng.choice(MEDIA)
    return (f"Just finished the {kind} {g.title(m)} by {g.person(m)}, "
            f"{rng.choice(('could not put it down', 'the ending surprised me', 'a bit slow in the middle', 'you would love it'))}.")


def _pet(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    kind, action = rng.choice(PETS)
    name = rng.choice(PET_NAMES)
    m.setdefault("pet", f"{name} the {kind}")
    return f"Our {kind} {name} {action} {g.when()}, {rng.choice(('so proud', 'what a day', 'never a dull moment', 'typical'))}."


def _fitness(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"I ran {g.number(3, 42)} kilometers along the {rng.choice(LANDMARKS)} in {g.city(m)} {g.when()}.",
        lambda: f"Signed up for a {g.number(5, 100)} kilometer race in {g.city(m)} in {rng.choice(MONTHS)}.",
        lambda: f"I {g.activity(m)[1]} for {g.number(1, 6)} hours {g.when()} and my legs are still sore.",
    )


def _cooking(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"Made {g.food(m)} for {g.first_name(m)} {g.when()}, used my grandmother's recipe.",
        lambda: f"Tried cooking {g.food(m)} with {rng.choice(FOODS)} on the side, {rng.choice(ADJ_GOOD + ADJ_BAD)}.",
        lambda: f"We had {g.food(m)} at {g.venue(m)} {g.when()}, the bill came to {g.number(20, 180)} dollars.",
    )


def _decision(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"We decided to {g.activity(m)[2]} in {g.city(m)} instead of staying home in {rng.choice(MONTHS)}.",
        lambda: f"We agreed to meet {g.first_name(m)} at {g.venue(m)} every {rng.choice(WEEKDAYS)}.",
        lambda: f"I chose the {g.thing(m)} with the longer warranty in the end.",
    )


# Templates that state a durable fact (a preference, a plan, a decision, a job) are drawn a fifth
# as often as the others: about 0.13 learned facts per episode, against ~0.06 in the shared LoCoMo
# conversations and 0.38 when every template is drawn evenly.
_FACTUAL = 1
_CHATTY = 5
_OPENERS: tuple[Composer, ...] = (
    _news_trip, _ask_trip, _recommend, _purchase, _media, _pet, _fitness, _cooking, _person_news,
    _plan, _preference, _work, _decision,
)
_OPENER_WEIGHTS = tuple(accumulate([_CHATTY] * 9 + [_FACTUAL] * 4))


def _react(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"{rng.choice(REACTIONS)}, {to}! Was {g.first_name(m)} there too?",
        lambda: f"{rng.choice(REACTIONS)}! How long did you stay in {g.city(m)}?",
        lambda: f"{rng.choice(REACTIONS)}. Send me pictures of the {rng.choice(LANDMARKS)}!",
        lambda: f"{rng.choice(REACTIONS)}, {to}. I'm feeling {rng.choice(FEELINGS)} about {g.activity(m)[0]} myself.",
    )


def _same_here(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    act = g.activity(m)
    return f"{g.rng.choice(REACTIONS)}! I {act[1]} with {g.person(m)} in {g.city(m)} {g.when()}."


def _advice(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"You should try the {g.food(m)} at {g.venue(m)}, it's right by the {rng.choice(LANDMARKS)}.",
        lambda: f"Ask {g.person(m)}, she knows everything about {g.activity(m)[0]}.",
        lambda: f"If you go to {g.city(m)}, skip the {rng.choice(LANDMARKS)} and take the ferry instead.",
    )


_REPLIES: tuple[Composer, ...] = (
    _react, _react, _same_here, _advice, _person_news, _cooking, _fitness, _media, _pet, _purchase, _preference,
)
_REPLY_WEIGHTS = tuple(accumulate([_CHATTY] * 10 + [_FACTUAL]))


def _extra_weather(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    return f"{g.rng.choice(WEATHER).capitalize()}."


def _extra_feeling(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return f"Honestly I feel {rng.choice(FEELINGS)} about it, {rng.choice(('more than I expected', 'which is new', 'as usual', 'for once'))}."


def _extra_detail(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"We got there around {rng.randint(6, 11)} and stayed until the {rng.choice(LANDMARKS)} closed.",
        lambda: f"{g.first_name(m)} brought {g.food(m)} for everyone.",
        lambda: f"It took {rng.choice(NUMBER_WORDS)} tries to find parking.",
        lambda: f"Next time I want to bring the {g.thing(m)}.",
        lambda: f"The {rng.choice(('tickets', 'train', 'ferry', 'taxi', 'hostel'))} cost {g.number(5, 250)} euros.",
    )


def _extra_question(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"Are you free on {rng.choice(WEEKDAYS)}?", lambda: f"What about you, {to}?",
        lambda: f"Did you ever finish {g.title(m)}?", lambda: f"How is {g.first_name(m)} doing?",
    )


def _extra_plan(g: ConversationGenerator, to: str, m: dict[str, str]) -> str:
    rng = g.rng
    return _one(
        rng,
        lambda: f"Maybe we can all go to {g.city(m)} in {rng.choice(MONTHS)}.",
        lambda: f"I still owe {g.first_name(m)} a dinner at {g.venue(m)}.",
        lambda: f"{rng.choice(NUMBER_WORDS).capitalize()} more weeks until the holidays.",
    )


def _one(rng: random.Random, *variants: Callable[[], str]) -> str:
    """One of the variants, chosen first and only then rendered: only its slots are drawn and
    recorded as mentions."""
    return rng.choice(variants)()


def _a(noun: str) -> str:
    """``noun`` with its indefinite article."""
    return f"{'an' if noun[0].lower() in 'aeiou' else 'a'} {noun}"


_EXTRAS: tuple[Composer, ...] = (_extra_weather, _extra_feeling, _extra_detail, _extra_question, _extra_plan)


# ---------------------------------------------------------------------------- queries


def recall_queries(count: int, mentions: Sequence[dict[str, str]], *, seed: int = SEED) -> list[str]:
    """``count`` varied queries: every other one about a mention the store holds (a speaker with
    a person, place, activity, food, ... that one message named together), the rest general
    questions, words the store never holds, or names and places drawn at random."""
    rng = random.Random(seed + 2)
    held = list(mentions)
    out: list[str] = []
    for i in range(count):
        if i % 2 == 0 and held:
            out.append(_known_query(rng, rng.choice(held)))
        else:
            out.append(_other_query(rng))
    return out


def warmup_queries(count: int, mentions: Sequence[dict[str, str]]) -> list[str]:
    """The queries that warm a recall process before the timed :func:`recall_queries`: as
    many, of the same kinds, from another seed."""
    return recall_queries(count, mentions, seed=SEED + WARMUP_SEED_OFFSET)


def _known_query(rng: random.Random, m: dict[str, str]) -> str:
    who = m["speaker"]
    asks = []
    if "activity" in m and "person" in m:
        asks.append(f"When did {who} go {m['activity']} with {m['person']}?")
    if "activity" in m and len(m) == 2:
        asks.append(f"Does {who} still do {m['activity']}?")
    if "activity" in m and "place" in m:
        asks.append(f"What did {who} do in {m['place']}? Something about {m['activity']}?")
    if "food" in m:
        asks.append(f"What did {who} say about the {m['food']}" + (f" at {m['venue']}?" if "venue" in m else "?"))
    if "venue" in m:
        asks.append(f"Which place did {who} recommend, was it {m['venue']}?")
    if "thing" in m:
        asks.append(f"Did {who} buy {_a(m['thing'])}?")
    if "title" in m:
        asks.append(f"What did {who} think of {m['title']}?")
    if "pet" in m:
        asks.append(f"How is {m['pet']} doing?")
    if "project" in m:
        asks.append(f"What happened with {m['project']} at {who}'s work?")
    if "favorite" in m:
        asks.append(f"What is {who}'s favorite {m['favorite'].split(':')[0]}?")
    if "person" in m:
        asks.append(f"Who is {m['person']} to {who}?")
    if "place" in m:
        asks.append(f"Has {who} been to {m['place']}?")
    return rng.choice(asks) if asks else f"What has {who} been up to?"


def _other_query(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.35:
        return rng.choice(GENERIC_QUERIES)
    if pick < 0.7:
        word = rng.choice(ABSENT)
        return rng.choice((
            f"Does anyone I know do {word}?", f"What did {rng.choice(SPEAKERS)} say about {word}?",
            f"I'm thinking of trying {word} in {rng.choice(CITIES)}, any advice?",
        ))
    return rng.choice((
        f"Did {rng.choice(FIRST_NAMES)} {rng.choice(SURNAMES)} ever visit {rng.choice(CITIES)}?",
        f"Where can I get good {rng.choice(FOODS)} near the {rng.choice(LANDMARKS)}?",
        f"Who likes {rng.choice(ACTIVITIES)[0]} and {rng.choice(ACTIVITIES)[0]}?",
    ))


# ---------------------------------------------------------------------------- building


@dataclass
class BuildRecord:
    """What a finished build wrote to its marker: counts, timings, and the mention sample."""

    episodes: int
    messages: int
    threads: int
    seconds: float
    add_seconds: float
    learn_seconds: float
    tail_from_episode: int  # the tail batches start after this many episodes
    tail_messages: int
    tail_add_seconds: float
    tail_learn_seconds: float
    batches: list[dict[str, float]]
    mentions: list[dict[str, str]]
    # a shared store: ``others`` users of OTHER_EPISODES each beside USER (``episodes`` counts
    # them all); they were built by a second process at the same time as USER
    others: int = 0
    others_each: int = OTHER_EPISODES
    others_messages: int = 0
    others_seconds: float = 0.0
    copied_from: str = ""  # a PostgreSQL store copied by ``reverie migrate`` from this SQLite build
    copy_seconds: float = 0.0
    generator: int = GENERATOR
    seed: int = SEED
    engine: str = ENGINE
    reverie: str = __version__
    finished_at: str = ""

    @property
    def ingest_turns_per_s(self) -> float:
        """Add + learn, the whole build."""
        return _rate(self.messages, self.add_seconds + self.learn_seconds)

    @property
    def user_episodes(self) -> int:
        """The measured user's (USER's) episodes."""
        return self.episodes - self.others * self.others_each

    @property
    def others_turns_per_s(self) -> float:
        return _rate(self.others_messages, self.others_seconds)

    @property
    def tail_learn_turns_per_s(self) -> float:
        """Learning alone (flush), the batches of the last 10% of the build."""
        return _rate(self.tail_messages, self.tail_learn_seconds)

    @property
    def tail_ingest_turns_per_s(self) -> float:
        return _rate(self.tail_messages, self.tail_add_seconds + self.tail_learn_seconds)

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def read(cls, path: Path) -> "BuildRecord | None":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
        except (OSError, ValueError, TypeError):
            return None


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


def build_store(
    home: Path, episodes: int, *, others: int = 0, each: int = OTHER_EPISODES,
    on_progress: Callable[[int, int], None] | None = None, store: str | None = None,
) -> BuildRecord:
    """Build the store of ``episodes`` episodes in ``home`` (which must not exist), and write
    the marker last. ``on_progress(episodes_done, episodes)`` after every batch of USER's.
    ``store``: a PostgreSQL URL (naming its schema) to build there instead of SQLite in the
    home. ``others``: a shared store, ``others`` users of ``each`` episodes beside USER, who
    holds the rest; a second process builds them while this one builds USER."""
    mine = _measured(episodes, others, each)
    home.mkdir(parents=True, exist_ok=True)
    load_dictionaries()  # once a process, as import did: not a cost of the turns timed
    helper = start_child(_OTHERS_CHILD, {"home": str(home), "others": others, "each": each, "store": store}) if others else None
    try:
        gen = ConversationGenerator(mine)
        with Memory(home, background=False, engine=ENGINE, store=store) as mem:
            batches, threads, seconds = _build_user(mem, gen, USER, on_progress)
    except BaseException:
        if helper is not None:
            helper.kill()
        raise
    from_others = finish_child(helper, what="build") if helper is not None else {}
    done = sum(int(b["episodes"]) for b in batches)
    cut = mine * (1 - TAIL)
    tail = [b for b in batches if b["start"] + b["episodes"] > cut] or batches[-1:]
    record = BuildRecord(
        episodes=done + others * each,
        messages=gen.messages,
        threads=len(threads),
        seconds=round(seconds, 3),
        add_seconds=round(sum(b["add_s"] for b in batches), 3),
        learn_seconds=round(sum(b["learn_s"] for b in batches), 3),
        tail_from_episode=int(tail[0]["start"]) if tail else 0,
        tail_messages=int(sum(b["messages"] for b in tail)),
        tail_add_seconds=round(sum(b["add_s"] for b in tail), 3),
        tail_learn_seconds=round(sum(b["learn_s"] for b in tail), 3),
        batches=batches,
        mentions=gen.mentions,
        others=others,
        others_each=each,
        others_messages=int(from_others.get("messages", 0)),
        others_seconds=round(float(from_others.get("seconds", 0.0)), 3),
        finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    write_marker(home, record)
    return record


def _measured(episodes: int, others: int, each: int) -> int:
    """USER's episodes in a store of ``episodes`` shared with ``others`` users of ``each``."""
    mine = episodes - others * each
    if others < 0 or each <= 0 or mine <= 0:
        raise InvalidInput(f"{others} other users of {each:,} episodes leave no episodes of {episodes:,} "
                           "for the measured user", field="others")
    return mine


def write_marker(home: Path, record: BuildRecord) -> None:
    """The marker, written last and atomically: a home without it is an unfinished build."""
    home.mkdir(parents=True, exist_ok=True)  # on PostgreSQL the memory may have written no file
    tmp = home / (MARKER + ".tmp")
    tmp.write_text(json.dumps(record.as_json()), encoding="utf-8")
    os.replace(tmp, home / MARKER)


def _build_user(
    mem: Memory, gen: "ConversationGenerator", user: str, on_progress: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, float]], set[str], float]:
    """Every session of ``gen`` added for ``user`` through the public API, learned (flush)
    after every ~:data:`BATCH_MESSAGES` messages: (the batches' figures, threads, seconds)."""
    batches: list[dict[str, float]] = []
    threads: set[str] = set()
    done = 0
    started = time.perf_counter()
    pending: list[Session] = []
    for session in _then_none(gen.sessions()):
        if session is not None:
            pending.append(session)
            if sum(len(s.messages) for s in pending) < BATCH_MESSAGES:
                continue
        if not pending:
            break
        t0 = time.perf_counter()
        stored = 0
        for s in pending:
            stored += len(mem.add(s.messages, user=user, thread=s.thread, group="exchange"))
            threads.add(s.thread)
        t1 = time.perf_counter()
        mem.flush(user=user)
        t2 = time.perf_counter()
        batches.append({"start": done, "episodes": stored, "messages": sum(len(s.messages) for s in pending),
                        "add_s": round(t1 - t0, 4), "learn_s": round(t2 - t1, 4)})
        done += stored
        pending = []
        if on_progress is not None:
            on_progress(done, gen.episodes)
    return batches, threads, time.perf_counter() - started


def build_others(home: str | Path, others: int, each: int = OTHER_EPISODES, store: str | None = None) -> dict[str, Any]:
    """The other users of a shared store, ``other-0000`` ..., ``each`` episodes each, each
    from its own seed: {"users", "messages", "seconds"} (add + learn)."""
    messages, seconds = 0, 0.0
    load_dictionaries()  # (as build_store)
    with Memory(Path(home), background=False, engine=ENGINE, store=store) as mem:
        for i in range(others):
            gen = ConversationGenerator(each, seed=SEED + 1000 + i, sample=0)
            seconds += _build_user(mem, gen, f"{OTHER_PREFIX}{i:04d}")[2]
            messages += gen.messages
    return {"users": others, "messages": messages, "seconds": seconds}


_OTHERS_CHILD = r"""
import json, sys
job = json.load(sys.stdin)
from reverie.bench.scale import build_others
json.dump(build_others(job["home"], job["others"], job["each"], job.get("store")), sys.stdout)
"""


def _then_none(sessions: Iterator[Session]) -> Iterator[Session | None]:
    """The sessions, then one ``None``: the signal to add what is left."""
    yield from sessions
    yield None


def cached_build(
    cache: Path, episodes: int, *, others: int = 0, each: int = OTHER_EPISODES, rebuild: bool = False,
    on_progress: Callable[[int, int], None] | None = None, server: str | None = None,
) -> tuple[Path, BuildRecord, bool]:
    """(home, record, built now): the finished store of ``episodes`` under ``cache``, built when
    it is missing, unfinished (no marker), of another generator version, or ``rebuild``.
    With ``server`` (a PostgreSQL URL) the store is the schema :func:`pg_schema` names on that
    server, and the home (``pg-episodes-<N>/``) holds the marker and the user's files. A
    shared store (``others``) on PostgreSQL is the SQLite build copied by ``reverie migrate``
    (learning a million episodes twice would take hours): its build figures are SQLite's."""
    name = f"episodes-{episodes}" + (f"-others-{others}x{each}" if others else "")
    home = cache / (f"pg-{name}" if server else name)
    record = None if rebuild else BuildRecord.read(home / MARKER)
    store = pg_store(server, home) if server else None
    if (record is not None and record.generator == GENERATOR and record.episodes == episodes
            and record.others == others and (not others or record.others_each == each) and (server is None or _schema_bytes(server, pg_schema(home)) > 0)):
        return home, record, False
    if home.exists():
        shutil.rmtree(home)
    if server:
        _drop_schema(server, pg_schema(home))
    home.parent.mkdir(parents=True, exist_ok=True)
    if server and others:
        source, record, _ = cached_build(cache, episodes, others=others, each=each, rebuild=rebuild,
                                         on_progress=on_progress)
        assert store is not None
        record = copy_to_postgres(source, record, store)
        write_marker(home, record)
    else:
        record = build_store(home, episodes, others=others, each=each, on_progress=on_progress, store=store)
    if server:
        _vacuum_analyze(server, pg_schema(home))
    return home, record, True


def copy_to_postgres(source: Path, record: BuildRecord, store: str) -> BuildRecord:
    """The SQLite build in ``source`` copied into ``store`` with ``reverie migrate`` (which
    counts the rows of every kind on both sides; the export comparison is left out, it would
    hold a heavy user's whole memory twice): the build's record, saying where it was copied
    from and how long it took."""
    started = time.perf_counter()
    with Memory(source, background=False, engine=ENGINE) as mem:
        migrate_home(mem.ctx, store, compare_exports=False)
    return dataclasses.replace(record, copied_from=str(source), copy_seconds=round(time.perf_counter() - started, 3),
                               finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def pg_schema(home: Path) -> str:
    """The schema a PostgreSQL build lives in, kept between runs like a home: named after
    the build's home (``<cache>/pg-episodes-<N>``), so two caches never share one."""
    digest = hashlib.sha256(str(home.expanduser().resolve()).encode()).hexdigest()[:10]
    return f"reverie_scale_{home.name.replace('-', '_')}_{digest}"


def pg_store(server: str, home: Path) -> str:
    return with_schema(split_schema(server)[0], pg_schema(home))


def _pg_connect(server: str) -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise InvalidInput(f"a PostgreSQL benchmark needs the driver: {EXTRA}", field="store") from exc
    return psycopg.connect(split_schema(server)[0], autocommit=True)


def _drop_schema(server: str, schema: str) -> None:
    with _pg_connect(server) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _vacuum_analyze(server: str, schema: str) -> None:
    """What autovacuum does to a table after a bulk load (a test server may run without it):
    the dead row versions of the build gone and the planner's statistics taken."""
    with _pg_connect(server) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        for table in tables:
            conn.execute(f'VACUUM (ANALYZE) "{schema}"."{table}"')


def _schema_bytes(server: str, schema: str) -> int:
    """Every table of the schema with its indexes and TOAST (0 when there is no such schema)."""
    with _pg_connect(server) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
            (schema,),
        ).fetchone()
    return int(row[0]) if row else 0


# ---------------------------------------------------------------------------- measuring

# A recall-only process: opens the home, runs the recalls it is given on stdin, and reports
# the times and its own peak RSS. ``first`` mode times the very first recall after opening.
_RECALL_CHILD = r"""
import json, sys, time
job = json.load(sys.stdin)
t0 = time.perf_counter()
from reverie.memory import Memory
imported = time.perf_counter() - t0
t0 = time.perf_counter()
mem = Memory(job["home"], background=False, engine=job["engine"], store=job.get("store"))
opened = time.perf_counter() - t0
from reverie.text import load_dictionaries
load_dictionaries()  # as a server loads them before it settles its heap
import gc
gc.collect()
gc.freeze()  # as `reverie serve` does after start-up (reverie.server.workers.settle_heap)
warmup_times = []
for query in job["warmup"]:
    t0 = time.perf_counter()
    mem.recall(query, user=job["user"], budget=job["budget"], track=False)
    warmup_times.append(time.perf_counter() - t0)
times = []
waited = getattr(mem.store, "waits", None)  # PostgreSQL: the round trips it waited for
for query in job["queries"]:
    t0 = time.perf_counter()
    mem.recall(query, user=job["user"], budget=job["budget"], track=False)
    times.append(time.perf_counter() - t0)
trips = None if waited is None or not times else (mem.store.waits - waited) / len(times)
mem.close()
from reverie.bench.child import peak_rss_bytes
json.dump({"import_s": imported, "open_s": opened, "times": times, "warmup_times": warmup_times,
           "rss_bytes": peak_rss_bytes(), "round_trips": trips}, sys.stdout)
"""


def _recall_process(home: Path, queries: list[str], warmup: list[str], store: str | None = None) -> dict[str, Any]:
    job = {"home": str(home), "user": USER, "budget": BUDGET, "engine": ENGINE, "queries": queries, "warmup": warmup,
           "store": store}
    return run_child(_RECALL_CHILD, job, what="recall")


def disk_bytes(home: Path) -> int:
    """Every file of the home, the marker included."""
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())


@dataclass
class SizeReport:
    store: str  # "sqlite" or "postgresql"
    episodes: int
    home: str
    built: bool  # False: the cached store was reused and its build figures read from the marker
    build: BuildRecord
    recalls: int
    recall_ms: dict[str, float]  # the timed recalls, after the warm-up
    warmup_ms: dict[str, float]  # the warm-up recalls (other queries), as the page cache was found
    first_recall_ms: float
    open_ms: float
    import_ms: float
    disk_bytes: int
    peak_rss_bytes: int
    round_trips: float | None = None  # PostgreSQL: the mean round trips of a timed recall

    def as_dict(self) -> dict[str, Any]:
        b = self.build
        return {
            "store": self.store,
            "episodes": self.episodes,
            "user_episodes": b.user_episodes,
            "others": ({"users": b.others, "episodes_each": b.others_each, "messages": b.others_messages,
                        "ingest_turns_per_s": round(b.others_turns_per_s, 1)} if b.others else None),
            "copied_from": b.copied_from or None,
            "copy_seconds": b.copy_seconds or None,
            "messages": b.messages,
            "threads": b.threads,
            "home": self.home,
            "built": self.built,
            "cached": not self.built,
            "build_seconds": b.seconds,
            "ingest_turns_per_s": round(b.ingest_turns_per_s, 1),
            "tail": {
                "from_episode": b.tail_from_episode,
                "messages": b.tail_messages,
                "learn_turns_per_s": round(b.tail_learn_turns_per_s, 1),
                "ingest_turns_per_s": round(b.tail_ingest_turns_per_s, 1),
            },
            "recalls": self.recalls,
            "recall_ms": {k: round(v, 2) for k, v in self.recall_ms.items()},
            "warmup_ms": {k: round(v, 2) for k, v in self.warmup_ms.items()},
            "first_recall_ms": round(self.first_recall_ms, 2),
            "open_ms": round(self.open_ms, 2),
            "import_ms": round(self.import_ms, 1),
            "disk_mb": round(self.disk_bytes / 1e6, 2),
            "peak_rss_mb": round(self.peak_rss_bytes / 1e6, 1),
            "round_trips": None if self.round_trips is None else round(self.round_trips, 2),
        }


@dataclass
class DilutionRow:
    conversation: str
    questions: int
    turns: int
    empty: float  # evidence recall at the budget, conversation alone in an empty store
    diluted: float  # the same, ingested into a copy of the large store (same user)

    def as_dict(self) -> dict[str, Any]:
        return {"conversation": self.conversation, "questions": self.questions, "turns": self.turns,
                "empty": round(self.empty, 4), "diluted": round(self.diluted, 4),
                "difference": round(self.diluted - self.empty, 4)}


def _rows_dict(rows: Sequence[DilutionRow]) -> dict[str, Any]:
    """Each conversation's row, and every question weighed once, as `reverie bench locomo` does."""
    n = sum(r.questions for r in rows) or 1
    empty = sum(r.empty * r.questions for r in rows) / n
    diluted = sum(r.diluted * r.questions for r in rows) / n
    return {
        "budget": BUDGET,
        "conversations": [r.as_dict() for r in rows],
        "all_questions": {"questions": n, "empty": round(empty, 4), "diluted": round(diluted, 4),
                          "difference": round(diluted - empty, 4)},
    }


# the concurrency check (issues 11 and 14): `reverie serve` over the smallest one-user store
SERVE_WORKERS = (1, 2)  # worker processes over SQLite, each with one client and with eight
SERVE_CLIENTS = (1, 8)
SERVE_REPLICAS = (1, 2)  # single-worker replicas over the PostgreSQL copy, eight clients


@dataclass
class ServeCheck:
    """Recall throughput of `reverie serve` on one size's store: ``workers``, one report of
    :func:`~reverie.bench.serve.run_serve_bench` per worker count (SQLite); ``replicas``, one
    per replica count over the PostgreSQL copy (empty without one)."""

    episodes: int
    workers: list[dict[str, Any]]
    replicas: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"store_episodes": self.episodes, "workers": self.workers, "replicas": self.replicas}
        # each list's rows are set against its first (against_first): one worker and one client,
        # one replica with the most clients; their last rows are the issues' ratios
        if self.workers and self.workers[-1]["rows"]:
            busiest = self.workers[-1]["rows"][-1]
            out["workers_ratio"], out["workers_p95_ms"] = busiest["x_first"], busiest["p95_ms"]  # issue 11
        if len(self.replicas) > 1 and self.replicas[-1]["rows"]:
            out["replicas_ratio"] = self.replicas[-1]["rows"][-1]["x_first"]  # issue 14
        return out


@dataclass
class ScaleReport:
    sizes: list[SizeReport]
    dilution: list[DilutionRow] = field(default_factory=list)
    dilution_episodes: int = 0  # the store the conversations were diluted in
    dilution_skipped: str = ""  # why there is no dilution check
    # the old-memory check: each conversation ingested first, `old_newer` episodes on top
    # ("diluted" in its rows: beneath them)
    old: list[DilutionRow] = field(default_factory=list)
    old_newer: int = 0
    old_skipped: str = ""  # why an old-memory check asked for was not made
    seconds: float = 0.0
    # how fast this machine ran fixed work before the sizes were measured (bench/machine.py)
    machine: MachineReference | None = None
    serve: ServeCheck | None = None
    serve_skipped: str = ""  # why there is no concurrency check

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "user": USER,
            "engine": ENGINE,
            "budget": BUDGET,
            "seed": SEED,
            "generator": GENERATOR,
            "reverie": __version__,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "machine": self.machine.as_dict() if self.machine else None,
            "sizes": [s.as_dict() for s in self.sizes],
            "dilution": None,
            "old_memories": None,
            "serve": self.serve.as_dict() if self.serve else None,
            "seconds": round(self.seconds, 1),
        }
        if self.serve_skipped:
            out["serve_skipped"] = self.serve_skipped
        if self.old:
            out["old_memories"] = {"newer_episodes": self.old_newer, **_rows_dict(self.old)}
        elif self.old_skipped:
            out["old_memories_skipped"] = self.old_skipped
        if self.dilution:
            out["dilution"] = {"store_episodes": self.dilution_episodes, **_rows_dict(self.dilution)}
        elif self.dilution_skipped:
            out["dilution_skipped"] = self.dilution_skipped
        out["targets"] = [t.as_dict() for t in targets(out)]
        return out


def serve_check(episodes: int, home: Path, requests: int, server: str | None = None) -> ServeCheck:
    """`reverie serve` over a copy of ``home`` with each of SERVE_WORKERS workers and each of
    SERVE_CLIENTS clients, ``requests`` recalls a row; and, with ``server`` (a PostgreSQL URL),
    SERVE_REPLICAS single-worker replicas over that copy migrated into a scratch schema, with
    the most clients (twice the requests: a row there is short). A served recall counts a
    use of what it delivers (and may promote a fact), so the cached store is not served: it
    stays as it was built, for the next run and for the dilution check."""
    with tempfile.TemporaryDirectory(prefix="reverie-serve-") as tmp:
        copy = Path(tmp) / "home"
        shutil.copytree(home, copy)
        with ExitStack() as stack:
            pg = None
            if server is not None:  # (copied before any recall wrote to the copy)
                pg = stack.enter_context(scratch_schema(split_schema(server)[0], prefix="reverie_serve"))
                with Memory(copy, background=False, engine=ENGINE) as mem:
                    migrate_home(mem.ctx, pg, compare_exports=False)
                _vacuum_analyze(server, str(split_schema(pg)[1]))
            workers = against_first([run_serve_bench(copy, user=USER, workers=w, clients=SERVE_CLIENTS,
                                                     requests=requests) for w in SERVE_WORKERS])
            replicas = [] if pg is None else against_first([
                run_serve_bench(copy, user=USER, workers=1, clients=SERVE_CLIENTS[-1:], requests=2 * requests,
                                replicas=r, store=pg) for r in SERVE_REPLICAS])
    return ServeCheck(episodes, workers, replicas)


def measure_size(home: Path, record: BuildRecord, built: bool, recalls: int, server: str | None = None) -> SizeReport:
    """Recall timings, size and peak RSS of one built store. On PostgreSQL the size is the
    schema's tables, indexes and TOAST plus the home's files, and the peak RSS is reverie's
    process alone (the server's memory is the server's)."""
    queries = recall_queries(recalls, record.mentions)
    warmup = warmup_queries(recalls, record.mentions)
    store = pg_store(server, home) if server else None
    size = disk_bytes(home) + (_schema_bytes(server, pg_schema(home)) if server else 0)
    # the first recall of a fresh process (the query a cold agent would send first)
    first = _recall_process(home, queries[:1] or ["What happened recently?"], [], store)
    # warm the page cache and the engine with other queries, then time every query
    timed = _recall_process(home, queries, warmup, store)
    times = timed["times"]
    return SizeReport(
        store="postgresql" if server else "sqlite",
        episodes=record.episodes,
        home=str(home),
        built=built,
        build=record,
        recalls=len(times),
        recall_ms=_percentiles(times),
        warmup_ms=_percentiles(timed["warmup_times"]),
        first_recall_ms=first["times"][0] * 1000,
        open_ms=first["open_s"] * 1000,
        import_ms=first["import_s"] * 1000,
        disk_bytes=size,
        peak_rss_bytes=int(timed["rss_bytes"]),
        round_trips=timed.get("round_trips"),
    )


def _percentiles(times: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 / mean of ``times`` (seconds), in milliseconds."""
    return {
        "p50": percentile(times, 50) * 1000,
        "p95": percentile(times, 95) * 1000,
        "p99": percentile(times, 99) * 1000,
        "mean": (sum(times) / len(times) * 1000) if times else 0.0,
    }


def _alone(case: LocomoCase, home: Path) -> CaseRecall:
    """``case`` ingested into an empty store at ``home`` and asked at :data:`BUDGET`."""
    with Memory(home, background=False, engine=ENGINE) as mem:
        return run_case(mem, USER, case, budgets=(BUDGET,))


def dilution(home: Path, cases: Sequence[LocomoCase], *, on_step: Callable[[str], None] | None = None) -> list[DilutionRow]:
    """Each case's evidence recall at :data:`BUDGET` in an empty store and in a copy of ``home``
    (the conversation ingested into :data:`USER`, who holds the whole synthetic store)."""
    step = on_step or (lambda label: None)
    rows = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="reverie-scale-") as tmp:
            alone = _alone(case, Path(tmp) / "empty")
            step(f"{case.name}: empty store")
            copy = Path(tmp) / "copy"
            shutil.copytree(home, copy)
            with Memory(copy, background=False, engine=ENGINE) as mem:
                diluted = run_case(mem, USER, case, budgets=(BUDGET,))
            step(f"{case.name}: diluted")
        rows.append(DilutionRow(case.name, len(case.questions), alone.turns, alone.recall_at_budget[BUDGET],
                                diluted.recall_at_budget[BUDGET]))
    return rows


def old_memories(
    cases: Sequence[LocomoCase], newer: int, *, empty: dict[str, float] | None = None,
    on_step: Callable[[str], None] | None = None, home: Path | None = None,
) -> list[DilutionRow]:
    """Each case's evidence recall at :data:`BUDGET` when the conversations are the oldest
    memories of :data:`USER`, with ``newer`` synthetic episodes ingested after them, against
    the conversation alone in an empty store (``empty``: figures already measured, by name).

    The dilution check ingests a conversation last, so that its turns are the newest matches
    of any word and always inside a search's window of newest matches; here they lie beneath
    everything said since, as a user's old memories do. Built each run, in a temporary home
    (or in ``home``, which must not exist, and is kept)."""
    step = on_step or (lambda label: None)
    known = dict(empty or {})
    with tempfile.TemporaryDirectory(prefix="reverie-scale-") as tmp:
        for case in cases:
            if case.name not in known:
                known[case.name] = _alone(case, Path(tmp) / f"empty-{len(known)}").recall_at_budget[BUDGET]
                step(f"{case.name}: empty store")
        with Memory(home or Path(tmp) / "old", background=False, engine=ENGINE) as mem:
            turns = {case.name: ingest_case(mem, USER, case)[0] for case in cases}
            step(f"conversations ingested; {newer:,} newer episodes on top")
            _build_user(mem, ConversationGenerator(newer), USER)
            beneath = {case.name: ask_case(mem, USER, case, budgets=(BUDGET,)).recall_at_budget[BUDGET]
                       for case in cases}
            step("old memories asked")
    return [DilutionRow(c.name, len(c.questions), turns[c.name], known[c.name], beneath[c.name]) for c in cases]


def run_scale(
    sizes: Sequence[int] = SIZES,
    *,
    cache: str | Path = DEFAULT_CACHE,
    recalls: int = 300,
    cases: Sequence[LocomoCase] = (),
    rebuild: bool = False,
    on_build: Callable[[int, int, int], None] | None = None,
    on_step: Callable[[str], None] | None = None,
    postgres: str | None = None,
    others: int = 0,
    each: int = OTHER_EPISODES,
    old: int = 0,
    dilute: bool = True,
    serve_requests: int = 0,
) -> ScaleReport:
    """Build (or reuse) a store per size under ``cache`` and measure it; then the dilution check
    of ``cases`` against the largest one-user store. ``on_build(size, episodes_done, episodes)``
    reports a build's progress, ``on_step(label)`` each measuring step. ``postgres`` (a server
    URL): every size also on PostgreSQL, side by side with SQLite (a schema per size, kept).
    ``others``: the largest size is a shared store, ``others`` users of ``each`` episodes
    beside the measured user, who holds the rest. ``old``: the old-memory check of ``cases``
    beneath that many newer episodes (:func:`old_memories`; 0 skips it); ``dilute=False``
    skips the dilution check (the cases serve the old-memory check alone). ``serve_requests``:
    the concurrency check on the smallest one-user store (:func:`serve_check`; 0 skips it)."""
    if postgres is not None and not is_postgres_url(postgres):
        raise InvalidInput("the scale benchmark sets SQLite beside a PostgreSQL server: the store must be a "
                           "postgresql:// URL", field="store")
    if not sizes or any(n <= 0 for n in sizes):
        raise InvalidInput("sizes must be positive episode counts", field="episodes")
    if recalls <= 0:
        raise InvalidInput("recalls must be positive", field="recalls")
    if old < 0:
        raise InvalidInput("old must be a number of newer episodes, 0 or more", field="old_memories")
    if serve_requests < 0:
        raise InvalidInput("serve_requests must be a number of recalls, 0 or more", field="serve_requests")
    _measured(max(sizes), others, each)
    step = on_step or (lambda label: None)
    root = Path(cache).expanduser()
    started = time.perf_counter()
    step("machine reference")
    machine = machine_reference()
    reports: list[SizeReport] = []
    homes: dict[int, Path] = {}
    for n in sorted(set(sizes)):
        shared = others if n == max(sizes) else 0
        progress = None if on_build is None else (lambda done, total, n=n: on_build(n, done, total))
        label = f"{n:,} episodes" + (f" ({shared} other users)" if shared else "")
        step(f"{label}: store")
        home, record, built = cached_build(root, n, others=shared, each=each, rebuild=rebuild, on_progress=progress)
        step(f"{label}: {recalls} recalls")
        reports.append(measure_size(home, record, built, recalls))
        if not shared:
            homes[n] = home
        if postgres:
            step(f"{label}: PostgreSQL store")
            pg_home, pg_record, pg_built = cached_build(root, n, others=shared, each=each, rebuild=rebuild,
                                                        on_progress=progress,
                                                        server=postgres)
            step(f"{label}: {recalls} recalls on PostgreSQL")
            reports.append(measure_size(pg_home, pg_record, pg_built, recalls, server=postgres))
    report = ScaleReport(reports, machine=machine)
    if serve_requests and homes:
        smallest = min(homes)
        step(f"{smallest:,} episodes: reverie serve")
        report.serve = serve_check(smallest, homes[smallest], serve_requests, postgres)
    elif serve_requests:
        report.serve_skipped = "no one-user store in this run"
    if not dilute:
        report.dilution_skipped = "not asked for (--no-dilution)"
    elif cases and homes:
        largest = max(homes)
        report.dilution = dilution(homes[largest], cases, on_step=step)
        report.dilution_episodes = largest
    elif cases:
        report.dilution_skipped = "no one-user store in this run (the shared store is not copied for it)"
    else:
        report.dilution_skipped = "no LoCoMo conversations given"
    if cases and old:
        alone = {r.conversation: r.empty for r in report.dilution}
        report.old, report.old_newer = old_memories(cases, old, empty=alone, on_step=step), old
    elif old:
        report.old_skipped = "no LoCoMo conversations given"
    report.seconds = time.perf_counter() - started
    return report
