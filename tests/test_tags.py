"""The feature-tag engine: one test per rule of seed 003 / issue 3."""

from __future__ import annotations

import pytest

from reverie import InvalidInput
from reverie.models import Tag
from reverie.tags import TagWriter, expand, is_generic, normalize_tag, resolve


@pytest.fixture
def writer(mem):
    return TagWriter(mem.store, "ana")


def _tags(writer, *names, status="active"):
    created = writer.ensure(list(names))
    for name in created:
        writer.set_status(name, status)
    return created


def test_normalize_folds_case_hyphens_and_plurals():
    assert normalize_tag("Code-Reviews") == normalize_tag("code review") == "code review"
    assert normalize_tag("结论") == "结论"


def test_control_characters_in_a_tag_separate_words_as_blanks_do(writer, mem):
    assert normalize_tag("\x00nul") == "nul" and normalize_tag("rust\x07lang") == "rust lang"
    writer.ensure(["\x00kayak"])
    assert [t.name for t in mem.store.list_tags("ana")] == ["kayak"]


def test_new_tags_enter_unexamined(writer, mem):
    writer.ensure(["postgres migration"])
    assert mem.store.get_tags("ana", ["postgres migration"])["postgres migration"].status == "unexamined"


@pytest.mark.parametrize("word", ["thing", "Time", "问题", "the", "事情", "42"])
def test_generic_words_never_become_tags(writer, mem, word):
    assert is_generic(word)
    assert writer.ensure([word]) == []
    assert mem.store.list_tags("ana") == []


def test_an_existing_tag_that_is_generic_gets_deprecated(writer, mem):
    mem.store.put_tag(Tag(user="ana", name="stuff", status="active"))
    writer.ensure(["stuff"])
    assert mem.store.get_tags("ana", ["stuff"])["stuff"].status == "deprecated"


def test_relations_are_written_both_ways(writer, mem):
    _tags(writer, "postgres", "database")
    assert writer.relate("postgres", "database", "related")
    levels = {(r.source, r.target): r.level for r in mem.store.relations("ana", ["postgres", "database"])}
    assert levels == {("postgres", "database"): "related", ("database", "postgres"): "related"}


def test_relations_only_upgrade(writer, mem):
    _tags(writer, "vim", "neovim")
    assert writer.relate("vim", "neovim", "synonym")
    assert not writer.relate("vim", "neovim", "loose")  # no downgrade
    assert not writer.relate("neovim", "vim", "related")
    assert mem.store.relations("ana", ["vim"])[0].level == "synonym"
    _tags(writer, "editor")
    assert writer.relate("vim", "editor", "loose")
    assert writer.relate("vim", "editor", "related")  # upgrade allowed
    assert {r.target: r.level for r in mem.store.relations("ana", ["vim"])}["editor"] == "related"


def test_many_relations_written_at_once_are_judged_in_order_as_one_at_a_time(writer, mem):
    names = [f"tag{i}" for i in range(600)]  # more names than one read takes
    _tags(writer, *names)
    batch = [(names[i], names[i + 1], "loose") for i in range(599)]
    batch += [("tag0", "tag1", "synonym"), ("tag1", "tag0", "related"), ("tag5", "tag5", "synonym"),
              ("tag7", "no such tag", "related"), ("tag598", "tag599", "related")]
    assert writer.relate_all(batch) == 599 + 2  # no downgrade from synonym, no self-loop, no new tag
    levels = {(r.source, r.target): r.level for r in mem.store.relations("ana", names)}
    assert len(levels) == 2 * 599
    assert levels[("tag1", "tag0")] == "synonym" and levels[("tag599", "tag598")] == "related"
    assert levels[("tag300", "tag301")] == "loose"


def test_a_relation_never_creates_a_tag(writer, mem):
    _tags(writer, "postgres")
    assert not writer.relate("postgres", "brand new tag", "synonym")
    assert "brand new tag" not in mem.store.get_tags("ana", ["brand new tag"])
    assert mem.store.relations("ana", ["postgres"]) == []


def test_no_self_loops(writer, mem):
    _tags(writer, "postgres")
    assert not writer.relate("postgres", "Postgres", "synonym")
    assert mem.store.relations("ana", ["postgres"]) == []


def test_synonyms_expand_up_to_three_hops(writer, mem):
    _tags(writer, "a1", "a2", "a3", "a4", "a5")
    for x, y in (("a1", "a2"), ("a2", "a3"), ("a3", "a4"), ("a4", "a5")):
        writer.relate(x, y, "synonym")
    reached = expand(mem.store, "ana", ["a1"]).weights
    assert set(reached) == {"a1", "a2", "a3", "a4"}
    assert reached["a1"] > reached["a2"] > reached["a3"] > reached["a4"]


def test_related_expands_one_hop_and_loose_never(writer, mem):
    _tags(writer, "hiking", "mountains", "weather", "boots")
    writer.relate("hiking", "mountains", "related")
    writer.relate("mountains", "weather", "related")
    writer.relate("hiking", "boots", "loose")
    reached = expand(mem.store, "ana", ["hiking"]).weights
    assert set(reached) == {"hiking", "mountain"}


def test_weak_tags_join_the_expansion_at_their_weight_only_while_live(writer, mem):
    """The best matches' tags (``weak``) lead to memories more weakly than the query's own and
    never weaken a tag the query reached; a deprecated or unknown one is left out."""
    _tags(writer, "hiking", "mountains", "boots", "legacy")
    writer.relate("hiking", "mountains", "related")
    writer.set_status("legacy", "deprecated")
    found = expand(mem.store, "ana", ["hiking"],
                   weak={"boot": "ep_1", "mountain": "ep_2", "hiking": "ep_3", "legacy": "ep_4", "nowhere": "ep_5"},
                   weak_weight=0.6)
    assert found.weights == {"hiking": 1.0, "mountain": 0.6, "boot": 0.6}
    assert found.via["mountain"] == "via ep_2" and found.via["hiking"] == "hiking"
    # weaker than what a relation gave: the relation's weight and origin stay
    kept = expand(mem.store, "ana", ["hiking"], weak={"mountain": "ep_2"}, weak_weight=0.3)
    assert kept.weights["mountain"] == 0.5 and kept.via["mountain"] == "hiking"


def test_merged_tag_redirects_and_merge_keeps_the_old_name(writer, mem):
    _tags(writer, "k8s", "kubernetes")
    fact = mem.remember("Runs services on kubernetes clusters", user="ana", tags=["k8s"])
    moved = mem.merge_tags("k8s", "kubernetes", user="ana")
    assert moved == 1
    old = mem.store.get_tags("ana", ["k8s"])["k8s"]
    assert old.status == "merged" and old.merged_to == "kubernetes"
    assert resolve(mem.store, "ana", ["k8s"]) == {"k8s": "kubernetes"}
    postings = mem.store.postings("ana", ["kubernetes"], ["fact"])
    assert [p.id for p in postings] == [fact.id]


def test_merge_redirects_are_cycle_safe(mem):
    mem.store.put_tag(Tag(user="ana", name="x", status="merged", merged_to="y"))
    mem.store.put_tag(Tag(user="ana", name="y", status="merged", merged_to="x"))
    assert resolve(mem.store, "ana", ["x"]) == {}


def test_merge_chain_longer_than_three_hops_stops(mem):
    for a, b in (("m1", "m2"), ("m2", "m3"), ("m3", "m4"), ("m4", "m5")):
        mem.store.put_tag(Tag(user="ana", name=a, status="merged", merged_to=b))
    mem.store.put_tag(Tag(user="ana", name="m5", status="active"))
    assert resolve(mem.store, "ana", ["m2"]) == {"m2": "m5"}
    assert resolve(mem.store, "ana", ["m1"]) == {}


def test_deprecated_tags_never_match(writer, mem):
    _tags(writer, "legacy", "modern")
    writer.relate("modern", "legacy", "synonym")
    writer.set_status("legacy", "deprecated")
    assert resolve(mem.store, "ana", ["legacy"]) == {}
    assert "legacy" not in expand(mem.store, "ana", ["modern"]).weights


def test_merge_into_itself_or_a_missing_tag_is_refused(writer, mem):
    _tags(writer, "solo")
    with pytest.raises(InvalidInput):
        mem.merge_tags("solo", "solo", user="ana")
    from reverie import NotFound

    with pytest.raises(NotFound):
        mem.merge_tags("solo", "nowhere", user="ana")


def test_recall_never_creates_tags(mem):
    mem.remember("Keeps bees in the garden", user="ana", tags=["beekeeping"])
    before = {t.name for t in mem.store.list_tags("ana")}
    mem.recall("tell me about quantum chromodynamics and beekeeping", user="ana")
    assert {t.name for t in mem.store.list_tags("ana")} == before


def test_learning_activates_new_tags_and_relates_similar_ones(mem):
    mem.add([{"role": "user", "content": "I decided to migrate the billing database to Postgres this quarter"}], user="ana")
    mem.flush()
    statuses = {t.name: t.status for t in mem.store.list_tags("ana")}
    assert statuses and "active" in statuses.values()


def test_the_live_tags_near_several_names_are_each_names_neighbours_together():
    from reverie.tagnames import TagNeighbours

    live = TagNeighbours(["code style", "code review", "coffee", "hiking trips", "kayak", "编程语言"])
    names = ["Code-Styles", "trip", "coding", "编程"]
    near = live.near(names)
    assert near == {other for n in names for other in live.neighbours(n)}
    assert {"code style", "code review", "hiking trips"} <= near and "kayak" not in near
    assert live.near(["code style"]) == {"code review"}  # a name is not its own neighbour
    assert "编程语言" in near
    assert live.near(names, per_key=1) <= near


def test_a_tag_that_leaves_the_live_index_is_no_ones_neighbour():
    from reverie.tagnames import TagNeighbours

    live = TagNeighbours(["code style", "code review", "coding"])
    live.discard("code review")
    live.discard("never added")
    assert len(live) == 2 and "code review" not in live
    assert "code review" not in live.neighbours("code") and "code style" in live.neighbours("code")
    assert "code review" not in live.near(["code", "review"])


@pytest.mark.parametrize("tag, says", [("ok", "too generic"), ("the", "too generic"), ("a", "too generic"),
                                       ("2024", "too generic"), ("work", "too generic"),
                                       ("password hunter2abc", "personal data")])
def test_a_tag_that_could_never_match_is_refused_by_name_not_dropped(mem, tag, says):
    from reverie import InvalidInput

    with pytest.raises(InvalidInput, match=says) as caught:
        mem.remember("Plays chess on Sundays", user="ana", tags=["chess", tag])
    assert caught.value.field == "tags" and mem.facts(user="ana") == []
    with pytest.raises(InvalidInput, match=says):
        mem.add_knowledge("Chess openings", "The Sicilian defence ...", user="ana", tags=[tag])
    assert mem.remember("Plays chess on Sundays", user="ana", tags=["chess"]).tags == ["chess"]


def test_no_tag_begins_or_ends_with_a_function_word_of_another_language(mem):
    said = [
        "Meine Bank-PIN ist 4521 und die PIN der Kreditkarte ist 9911",
        "Mi PIN es 4521 y el PIN de la tarjeta es 9911. Voy a Madrid con los niños y la abuela.",
        "Il mio PIN è 4521 e il PIN della carta è 9911",
        "Je vais à Paris avec la famille et les enfants",
    ]
    for i, content in enumerate(said):
        mem.add([{"role": "user", "content": content}], user="ana", thread=f"t{i}")
    mem.flush()
    names = {t.name for t in mem.store.list_tags("ana")}
    ends = {w for name in names for w in (name.split()[0], name.split()[-1])}
    assert not ends & {"und", "die", "der", "ist", "el", "la", "los", "es", "il", "mio", "della", "avec", "et", "les"}
    assert {"kreditkarte", "tarjeta", "carta", "famille"} <= names


def test_a_name_that_begins_with_an_article_keeps_it():
    from reverie.engines.heuristic import keyphrases

    assert "los angeles" in keyphrases("Last spring I moved to Los Angeles with my son")
    assert "la paz" in keyphrases("We spent a week hiking near La Paz")
