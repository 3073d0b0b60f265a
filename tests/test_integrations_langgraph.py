"""The LangGraph adapter against the real package: ReverieStore's put / get / search / delete /
list_namespaces over reverie facts and recall, a compiled graph using it, and the example
under examples/, run as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import anyio
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp
from langgraph.store.memory import InMemoryStore

from reverie import AsyncMemory, InvalidInput, Memory
from reverie.integrations.langgraph import ReverieStore, amemory_block, memory_block

ROOT = Path(__file__).resolve().parents[1]
ANA = ("memories", "ana")
BOB = ("memories", "bob")
EMAIL = "ana.lopez@example.com"
API_KEY = "sk-proj-Zx81mQv27LpT0aBcDeFgHiJkLmNoPqRsTuVw"


@pytest.fixture
def store(mem):
    return ReverieStore(mem)


def test_get_returns_the_value_as_put_and_a_put_under_the_same_key_replaces_it(store, mem):
    value = {"content": "Ana is vegetarian", "category": "constraint", "source": {"app": "chef", "v": 2}}
    store.put(ANA, "diet", value)
    item = store.get(ANA, "diet")
    assert item is not None and (item.namespace, item.key, item.value) == (ANA, "diet", value)
    assert isinstance(item.created_at, datetime) and item.created_at == item.updated_at

    store.put(ANA, "diet", {"content": "Ana is vegan"})
    again = store.get(ANA, "diet")
    assert again is not None and again.value == {"content": "Ana is vegan"}
    assert again.created_at == item.created_at and again.updated_at > item.updated_at
    (fact,) = mem.facts(user="ana")  # one key, one fact: replaced, not added
    assert (fact.content, fact.category) == ("Ana is vegan", "other")
    assert store.get(ANA, "no-such-key") is None


def test_a_put_is_a_fact_reverie_recalls_with_its_category_and_tags(store, mem):
    store.put(ANA, "diet", {"content": "Ana is vegetarian", "category": "constraint", "tags": ["food"]})
    (fact,) = mem.facts(user="ana")
    assert (fact.content, fact.category, fact.tags, fact.status) == (
        "Ana is vegetarian", "constraint", ["food"], "consolidated")
    assert "Ana is vegetarian" in mem.recall("what can ana eat?", user="ana").context
    store.put(ANA, "diet", {"content": "Ana is vegan"})
    assert [(f.content, f.tags) for f in mem.facts(user="ana")] == [("Ana is vegan", [])]  # replaced whole


def test_a_value_without_a_text_field_is_remembered_as_its_fields(store, mem):
    store.put(ANA, "likes", {"food": "pizza", "drinks": ["tea", "mate"], "empty": ""})
    assert [f.content for f in mem.facts(user="ana")] == ['food: pizza; drinks: ["tea", "mate"]']
    for field in ("text", "memory", "data"):
        store.put(ANA, field, {field: f"Said through {field}", "other": 1})
    assert {f.content for f in mem.facts(user="ana")} >= {"Said through text", "Said through memory",
                                                          "Said through data"}


def test_bad_values_and_keys_are_clear_errors_and_write_nothing(store, mem):
    with pytest.raises(InvalidInput, match="value must be a dict"):
        store.put(ANA, "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="no text to remember"):
        store.put(ANA, "k", {"count": None})
    with pytest.raises(InvalidInput, match="value must be JSON"):
        store.put(ANA, "k", {"content": "x", "when": {1, 2}})
    with pytest.raises(InvalidInput, match="max_fact_chars"):
        store.put(ANA, "k", {"content": "word " * 400})
    with pytest.raises(InvalidInput, match="did you mean 'preference'"):
        store.put(ANA, "k", {"content": "Likes tea", "category": "prefrence"})
    with pytest.raises(InvalidInput, match="key must be non-empty"):
        store.batch([PutOp(ANA, "", {"content": "x"})])
    with pytest.raises(InvalidInput, match="sensitive data"):
        store.put(ANA, f"mail-{EMAIL}", {"content": "x"})  # keys are stored as given
    with pytest.raises(InvalidInput, match="a key is at most 200"):
        store.put(ANA, "k" * 10_000, {"content": "x"})  # an id, as every id
    with pytest.raises(NotImplementedError, match="ttl"):
        store.put(ANA, "k", {"content": "x"}, ttl=5)
    assert mem.facts(user="ana") == []


def test_namespaces_are_validated_with_clear_errors(store):
    for bad in [("ana",), ("notes", "ana"), ("memories", "ana", "planner", "extra"), ("memories", "../etc"),
                ("memories", "")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match=r"\('memories', user\) or \('memories', user, agent\)"):
        store.get(("notes", "ana"), "k")
    with pytest.raises(InvalidNamespaceError, match="not a valid user id"):
        store.get(("memories", "a b"), "k")
    with pytest.raises(InvalidNamespaceError, match="a search names a user"):
        store.search(("memories",), query="anything")
    with pytest.raises(InvalidNamespaceError, match="a search names a user"):
        store.search((), query="anything")
    with pytest.raises(InvalidNamespaceError, match="sensitive data"):
        store.put(("memories", "ana", API_KEY), "k", {"content": "x"})
    with pytest.raises(InvalidInput, match="root"):
        ReverieStore(store.memory, root="a.b")
    custom = ReverieStore(store.memory, root="users")
    custom.put(("users", "ana"), "k", {"content": "Lives in Porto"})
    assert custom.get(("users", "ana"), "k") is not None
    with pytest.raises(InvalidNamespaceError, match=r"\('users', user\)"):
        custom.get(ANA, "k")


def test_delete_forgets_the_fact_reversibly_and_a_new_put_brings_the_key_back(store, mem):
    store.put(ANA, "diet", {"content": "Ana is vegetarian"})
    store.delete(ANA, "diet")
    assert store.get(ANA, "diet") is None
    assert store.search(ANA) == [] and store.search(ANA, query="is ana vegetarian?") == []
    (archived,) = mem.facts(user="ana", status="archived")  # forgotten, not destroyed
    assert archived.content == "Ana is vegetarian"
    first = mem.facts(user="ana", status="archived")[0].created_at
    store.delete(ANA, "diet")  # deleting what is gone is no error
    store.put(ANA, "diet", {"content": "Ana eats fish again"})
    item = store.get(ANA, "diet")
    assert item is not None and item.value == {"content": "Ana eats fish again"}
    assert item.created_at > first  # a new item, as LangGraph's own stores make it
    assert [f.content for f in mem.facts(user="ana")] == ["Ana eats fish again"]


def test_facts_reverie_learned_are_items_under_their_id(store, mem):
    fact = mem.remember("Prefers trains to planes", user="ana", category="preference")
    (listed,) = store.search(ANA)
    assert (listed.key, listed.value) == (fact.id, {"content": fact.content, "category": "preference", "tags": []})
    item = store.get(ANA, fact.id)
    assert item is not None and item.value["content"] == "Prefers trains to planes"
    store.delete(ANA, fact.id)
    assert mem.fact(fact.id).status == "archived"


def test_an_edit_elsewhere_shows_in_the_value(store, mem):
    store.put(ANA, "home", {"content": "Lives in Lisbon", "since": 2021})
    (fact,) = mem.facts(user="ana")
    mem.update_fact(fact.id, content="Lives in Porto")
    item = store.get(ANA, "home")
    assert item is not None and item.value == {"content": "Lives in Porto", "since": 2021}


def test_an_edit_elsewhere_of_a_value_without_text_field_shows_in_its_fields(store, mem):
    store.put(ANA, "likes", {"food": "pizza", "drink": "tea", "rating": 4})
    (fact,) = mem.facts(user="ana")
    assert fact.content == "food: pizza; drink: tea; rating: 4"
    mem.update_fact(fact.id, content="food: sushi; rating: 5")
    item = store.get(ANA, "likes")
    assert item is not None and item.value == {"food": "sushi", "rating": 5}
    mem.update_fact(fact.id, content="Loves sushi, no longer drinks tea")
    item = store.get(ANA, "likes")
    assert item is not None and item.value == {"content": "Loves sushi, no longer drinks tea"}


def test_search_runs_recall_and_returns_scored_items_best_first(store, mem):
    store.put(ANA, "diet", {"content": "Ana is vegetarian", "category": "constraint"})
    store.put(ANA, "city", {"content": "Ana lives in Lisbon near the river", "kind": "place"})
    store.put(ANA, "job", {"content": "Ana works as a nurse at night", "kind": "work"})
    mem.add([{"role": "user", "content": "My sister visits Lisbon in June"}], user="ana")
    doc = mem.add_knowledge("Lisbon trams", "Tram 28 climbs to the castle", user="ana")
    found = store.search(ANA, query="where does ana live? Lisbon")
    assert found[0].key == "city" and found[0].value == {"content": "Ana lives in Lisbon near the river",
                                                         "kind": "place"}
    scores = [item.score for item in found]
    assert all(s is not None and s > 0 for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    episodes = [item for item in found if item.value.get("kind") == "episode"]
    assert episodes and episodes[0].namespace == ANA and "sister" in episodes[0].value["content"]
    assert [i.key for i in store.search(ANA, query="where does ana live? Lisbon", filter={"kind": "place"})] == [
        "city"]
    keys = [item.key for item in found]
    assert [i.key for i in store.search(ANA, query="where does ana live? Lisbon", limit=1)] == keys[:1]
    assert [i.key for i in store.search(ANA, query="where does ana live? Lisbon", offset=1)] == keys[1:]
    (knowledge,) = [item for item in found if item.value.get("kind") == "knowledge"]
    assert (knowledge.key, knowledge.created_at, knowledge.updated_at) == (doc.id, doc.created_at, doc.updated_at)
    episode = mem.episode(episodes[0].key)
    assert (episodes[0].created_at, episodes[0].updated_at) == (episode.created_at, episode.completed_at)


def test_search_without_a_query_lists_the_namespace_with_filter_limit_and_offset(store):
    for n in range(5):
        store.put(ANA, f"k{n}", {"content": f"Fact number {n}", "n": n, "even": n % 2 == 0})
    listed = store.search(ANA)
    assert [i.key for i in listed] == ["k0", "k1", "k2", "k3", "k4"] and all(i.score is None for i in listed)
    assert [i.key for i in store.search(ANA, filter={"even": True})] == ["k0", "k2", "k4"]
    assert [i.key for i in store.search(ANA, filter={"n": {"$gte": 2, "$lt": 4}})] == ["k2", "k3"]
    assert [i.key for i in store.search(ANA, filter={"n": {"$ne": 0}}, limit=2, offset=1)] == ["k2", "k3"]
    assert [i.key for i in store.search(ANA, filter={"missing": {"$gt": 1}})] == []
    with pytest.raises(InvalidInput, match="unknown filter operator"):
        store.search(ANA, filter={"n": {"$near": 1}})
    with pytest.raises(InvalidInput, match="limit"):
        store.search(ANA, limit=-1)


def test_one_users_namespace_never_sees_another_users(store, mem):
    store.put(ANA, "diet", {"content": "Ana is vegetarian"})
    store.put(BOB, "diet", {"content": "Bob eats everything"})
    ana_fact = mem.facts(user="ana")[0]
    assert store.get(ANA, "diet").value["content"] == "Ana is vegetarian"  # type: ignore[union-attr]
    assert store.get(BOB, "diet").value["content"] == "Bob eats everything"  # type: ignore[union-attr]
    assert store.get(BOB, ana_fact.id) is None  # another user's fact id reaches nothing
    assert all("Ana" not in i.value["content"] for i in store.search(BOB, query="is ana vegetarian?"))
    assert [i.namespace for i in store.search(BOB)] == [BOB]
    store.delete(BOB, ana_fact.id)
    store.delete(BOB, "diet")
    assert mem.fact(ana_fact.id).status == "consolidated"
    assert store.get(ANA, "diet") is not None


def test_an_agent_namespace_holds_that_agents_facts(store, mem):
    planner = ("memories", "ana", "planner")
    store.put(planner, "season", {"content": "Plans trips in May"})
    store.put(ANA, "diet", {"content": "Ana is vegetarian"})
    assert store.get(ANA, "season") is None and store.get(planner, "diet") is None
    assert [f.agent for f in mem.facts(user="ana") if f.content == "Plans trips in May"] == ["planner"]
    assert {(i.namespace, i.key) for i in store.search(ANA)} == {(ANA, "diet"), (planner, "season")}
    assert [(i.namespace, i.key) for i in store.search(planner)] == [(planner, "season")]
    assert [i.key for i in store.search(planner, query="when does ana plan trips? May")] == ["season"]


def test_list_namespaces_finds_users_and_agents(store, mem):
    store.put(ANA, "a", {"content": "One"})
    store.put(("memories", "ana", "planner"), "b", {"content": "Two"})
    store.put(BOB, "c", {"content": "Three"})
    everything = [ANA, ("memories", "ana", "planner"), BOB]
    assert store.list_namespaces() == everything
    assert store.list_namespaces(prefix=ANA) == everything[:2]
    assert store.list_namespaces(prefix=("memories", "*")) == everything
    assert store.list_namespaces(suffix=("planner",)) == [("memories", "ana", "planner")]
    assert store.list_namespaces(max_depth=2) == [ANA, BOB]
    assert store.list_namespaces(limit=1, offset=1) == [("memories", "ana", "planner")]
    assert store.list_namespaces(prefix=("other",)) == [] and store.list_namespaces(prefix=("memories", "zoe")) == []


def test_sensitive_data_is_stripped_from_values_and_facts(store, mem, home):
    store.put(ANA, "contact", {"content": f"Ana's mail is {EMAIL}", "api_key": API_KEY,
                               "notes": [f"key {API_KEY}"]})
    item = store.get(ANA, "contact")
    assert item is not None and item.value == {"content": "Ana's mail is [email]", "api_key": "[api-key]",
                                               "notes": ["key [api-key]"]}
    assert mem.facts(user="ana")[0].content == "Ana's mail is [email]"
    mem.close()
    for path in home.rglob("*"):
        if path.is_file():
            assert EMAIL.encode() not in path.read_bytes() and API_KEY.encode() not in path.read_bytes(), path


def test_the_async_operations_and_an_async_memory(home):
    async def main() -> None:
        async with AsyncMemory(home, background=False) as amem:
            store = ReverieStore(amem)
            await store.aput(ANA, "diet", {"content": "Ana is vegetarian", "category": "constraint"})
            item = await store.aget(ANA, "diet")
            assert item is not None and item.value["content"] == "Ana is vegetarian"
            found = await store.asearch(ANA, query="is ana vegetarian?")
            assert found[0].key == "diet" and (found[0].score or 0) > 0
            assert await store.alist_namespaces() == [ANA]
            assert "Ana is vegetarian" in await amemory_block(store, "ana", "what should I cook?")
            await store.adelete(ANA, "diet")
            assert await store.aget(ANA, "diet") is None
            with pytest.raises(InvalidNamespaceError):
                await store.aget(("nope",), "diet")

    anyio.run(main)


def test_a_compiled_graph_writes_and_recalls_through_the_store(store):
    seen: list[str] = []

    def remember(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> dict[str, object]:
        text = str(state["messages"][-1].content)
        if text.startswith("remember "):
            store.put(("memories", config["configurable"]["user_id"]), "fact", {"content": text[9:]})
        return {}

    def respond(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> dict[str, object]:
        block = memory_block(store, config["configurable"]["user_id"], str(state["messages"][-1].content))
        seen.append(block)
        return {"messages": [("ai", "ok")]}

    graph = StateGraph(MessagesState)
    graph.add_node("remember", remember)
    graph.add_node("respond", respond)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "respond")
    graph.add_edge("respond", END)
    app = graph.compile(store=store)
    app.invoke({"messages": [("user", "remember I ride a red bicycle to work")]},
               {"configurable": {"user_id": "ana"}})
    app.invoke({"messages": [("user", "how do I get to work? bicycle?")]}, {"configurable": {"user_id": "ana"}})
    app.invoke({"messages": [("user", "how do I get to work? bicycle?")]}, {"configurable": {"user_id": "bob"}})
    assert seen[0].startswith("<memory>") and "I ride a red bicycle to work" in seen[1]
    assert "bicycle" not in seen[2]  # bob's prompt never holds ana's memory


def test_memory_block_needs_a_reverie_store():
    with pytest.raises(TypeError, match="ReverieStore"):
        memory_block(InMemoryStore(), "ana", "hello")


def test_the_langgraph_example_runs_offline(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "langgraph_agent.py"), str(tmp_path / "home")],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    out = run.stdout
    first, second = out.split("user: What should I cook tonight?")
    assert "user: Remember that I am vegetarian" in first and "assistant: Noted: no meat for you." in first
    block = second[second.index("<memory>"): second.index("</memory>")]
    assert "I am vegetarian" in block  # the node put the remembered fact into the prompt
    assert "assistant: A spicy chickpea curry, with no meat." in second
    assert any(line.startswith("found ") and line.endswith("I am vegetarian") for line in second.splitlines())
    with Memory(tmp_path / "home", background=False) as memory:
        assert [f.content for f in memory.facts(user="ana")] == ["I am vegetarian"]


def readme_snippet(heading: str) -> str:
    """The first python block under a README heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_the_readme_snippet_wires_a_graph_in_under_ten_lines(mem):
    code = readme_snippet("Use with LangGraph")
    assert len(code.splitlines()) < 10
    graph = StateGraph(MessagesState)
    graph.add_node("respond", lambda state: {"messages": [("ai", "ok")]})
    graph.add_edge(START, "respond")
    graph.add_edge("respond", END)
    scope: dict[str, object] = {"mem": mem, "graph": graph}  # what the quick start above defines
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["app"].store is scope["store"]  # type: ignore[attr-defined]
    assert [i.key for i in scope["hits"]][:1] == ["diet"]  # type: ignore[attr-defined]
    assert "Ana is vegetarian" in str(scope["prompt_context"])


def test_items_move_with_an_export_and_an_import(store, mem, tmp_path):
    store.put(ANA, "home", {"content": "Lives in Porto", "since": 2021})
    with Memory(tmp_path / "elsewhere", background=False) as other:
        other.import_(mem.export(user="ana"), user="ana")
        item = ReverieStore(other).get(ANA, "home")
        assert item is not None and item.value == {"content": "Lives in Porto", "since": 2021}


def test_search_leaves_the_profile_out(store, mem):
    mem.set_profile("user.workContext", "Ana leads the billing team at a bank in Lisbon", user="ana")
    store.put(ANA, "diet", {"content": "Ana is vegetarian", "category": "constraint"})
    (first,) = store.search(ANA, query="what does ana eat? vegetarian", limit=1)
    assert first.key == "diet"
    found = store.search(ANA, query="billing team bank Lisbon")
    assert all(item.value.get("kind") != "profile" for item in found)


def test_items_put_under_keys_stay_until_put_again_or_deleted_whatever_reverie_curates(store, mem):
    store.put(ANA, "m1", {"content": "Ana has a dentist appointment on March 3 at 10:00"})
    store.put(ANA, "m2", {"content": "Ana has a dentist appointment on April 7 at 15:30"})
    store.put(ANA, "d1", {"content": "Ana likes green tea"})
    store.put(ANA, "d2", {"content": "Ana likes green tea"})
    mem.remember("Ana has a dentist appointment on May 9 at 9:00", user="ana", category="context")
    mem.remember("Ana likes green tea", user="ana", category="preference")
    assert mem.dream(user="ana", days=3).status == "done"
    mem.consolidate(user="ana")
    for key in ("m1", "m2", "d1", "d2"):
        assert store.get(ANA, key) is not None, key
    assert {i.key for i in store.search(ANA)} >= {"m1", "m2", "d1", "d2"}
    store.delete(ANA, "m1")  # the application deletes what it keyed
    assert store.get(ANA, "m1") is None


def test_a_search_with_a_query_pages_and_filters_over_every_item_not_only_what_recall_delivered(store):
    for i in range(150):
        store.put(ANA, f"k{i}", {"content": f"Ana recipe note {i}: likes dish number {i} with rice", "i": i})
    best = store.search(ANA, query="rice dish recipe", limit=100)
    assert len(best) == 100 and best[0].score > 0
    assert [i.score for i in best] == sorted((i.score for i in best), reverse=True)
    rest = store.search(ANA, query="rice dish recipe", limit=100, offset=100)
    assert len(rest) == 50 and not {i.key for i in rest} & {i.key for i in best}
    late = store.search(ANA, query="rice dish recipe", filter={"i": {"$gte": 140}}, limit=50)
    assert sorted(i.value["i"] for i in late) == list(range(140, 150))


def test_a_refused_key_is_not_repeated_in_the_error(store):
    secret = "sk-proj-abcdEFGHijklMNOPqrstUVWXyz012345"
    with pytest.raises(InvalidInput) as refused:
        store.put(ANA, secret, {"content": "Ana is vegan"})
    assert "holds sensitive data" in str(refused.value) and "abcdEFGH" not in str(refused.value)


def test_a_filter_reads_nested_fields_as_langgraphs_own_store_does(store):
    reference = InMemoryStore()
    values = {"n1": {"content": "Likes green tea", "meta": {"kind": "pref", "level": 3}, "sizes": [1, 2]},
              "n2": {"content": "Likes black coffee", "meta": {"kind": "habit", "level": 1}, "sizes": [3]}}
    for key, value in values.items():
        store.put(ANA, key, value)
        reference.put(ANA, key, value)
    for condition in ({"meta": {"kind": "pref"}}, {"meta": {"level": {"$gt": 2}}}, {"meta": {"level": {"$lte": 3}}},
                      {"sizes": [3]}, {"meta": {"kind": "none"}}, {"content": "Likes black coffee"}):
        want = sorted(i.key for i in reference.search(ANA, filter=condition))
        assert sorted(i.key for i in store.search(ANA, filter=condition)) == want, condition
        assert sorted(i.key for i in store.search(ANA, query="what does ana like?", filter=condition)) == want


def test_tags_and_a_category_a_fact_cannot_take_are_refused_by_name(store, mem):
    with pytest.raises(InvalidInput, match="tag 'the' is too generic"):
        store.put(ANA, "k", {"content": "Likes tea", "tags": ["the"]})
    with pytest.raises(InvalidInput, match="tags must be a list"):
        store.put(ANA, "k", {"content": "Likes tea", "tags": "drinks"})
    with pytest.raises(InvalidInput, match="category must be text"):
        store.put(ANA, "k", {"content": "Likes tea", "category": 5})
    assert mem.facts(user="ana") == []  # nothing written
    store.put(ANA, "k", {"content": "Likes tea", "tags": ["billing"], "category": None})
    assert [(f.content, f.tags) for f in mem.facts(user="ana")] == [("Likes tea", ["billing"])]


def test_a_text_in_a_value_past_the_limit_is_refused_by_its_path(store, mem):
    with pytest.raises(InvalidInput, match=r"value\.blob\.parts\[0\] is 1,000,001 characters"):
        store.put(ANA, "k", {"content": "Likes tea", "blob": {"parts": ["y" * 1_000_001]}})
    assert mem.facts(user="ana") == []
