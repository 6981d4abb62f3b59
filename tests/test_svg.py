"""The static timeline picture: well-formed SVG drawn from the layout the live view uses."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from jupyter_refs import Cluster
from jupyter_refs.views.saved import trace_bundle
from jupyter_refs.views.svg import SVG_MIME, timeline_svg

NS = {"svg": "http://www.w3.org/2000/svg"}


@pytest.fixture(scope="module")
def race():
    """#8576 forced by hand: the release held, the same value scattered again."""
    cluster = Cluster(protocol="dask", network="immediate")
    client = cluster.client()
    x = client.scatter(123)
    cluster.hold("client:1->scheduler")
    del x
    x = client.scatter(123)  # noqa: F841 - held to the end: the future the race leaves dangling
    cluster.release_holds()
    cluster.run_until_idle()
    assert [v.name for v in cluster.violations][:1] == ["dangling_future"]
    return cluster


def test_the_picture_has_a_lane_per_actor_and_an_arrow_per_message(race):
    bundle = trace_bundle(race.trace, title="race <1> & co")
    root = ET.fromstring(timeline_svg(bundle))  # well-formed, escaping included
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.find("svg:title", NS).text == "timeline: race <1> & co"
    lanes = [g.get("data-lane") for g in root.iterfind(".//svg:g[@class='lane']", NS)]
    assert lanes == [lane["name"] for lane in bundle["lanes"]]  # the model's order, top to bottom
    actors = {e.actor for e in race.trace if e.actor != "checks"}
    assert [name for name in lanes if name in actors] == ["client:1", "scheduler", "worker:0"]
    assert len(set(lanes)) == len(lanes)
    arrows = root.findall(".//svg:g[@class='message']", NS)
    received = [e for e in race.trace if e.kind == "msg.received"]
    assert len(arrows) == len(received) == len(bundle["messages"]["x0"])
    assert sorted(int(a.get("data-msg-id")) for a in arrows) == sorted(e.msg_id for e in received)
    for arrow in arrows:  # a shaft, a bar on the channel's lane, a head
        assert len(arrow.findall("svg:line", NS)) == 2 and arrow.find("svg:polygon", NS) is not None
    late = next(a for a in arrows if a.get("data-op") == "client-releases-keys")
    assert "client:1 → scheduler" in late.find("svg:title", NS).text
    [cross] = root.findall(".//svg:g[@class='violation'][@data-name='dangling_future']", NS)
    assert "VIOLATION dangling_future" in cross.find("svg:title", NS).text
    dots = root.findall(".//svg:g[@class='events']/svg:circle", NS)
    assert len(dots) == len(bundle["events"]["x"]) > 0


def test_every_glyph_fits_the_picture(race):
    root = ET.fromstring(timeline_svg(trace_bundle(race.trace)))
    width, height = float(root.get("width")), float(root.get("height"))
    for dot in root.iterfind(".//svg:circle", NS):
        assert 0 <= float(dot.get("cx")) <= width and 0 <= float(dot.get("cy")) <= height
    for arrow in root.iterfind(".//svg:g[@class='message']/svg:line", NS):
        assert 0 <= float(arrow.get("x1")) <= float(arrow.get("x2")) <= width


def test_an_empty_trace_still_draws():
    cluster = Cluster(network="immediate")
    root = ET.fromstring(timeline_svg(trace_bundle(cluster.trace)))
    assert root.findall(".//svg:g[@class='lane']", NS) == []
    assert "0 events" in root.find("svg:text", NS).text


def test_timeline_outputs_carry_the_picture(race):
    from jupyter_refs.views.saved import SavedTrace
    from jupyter_refs.views.timeline import Timeline

    tl = Timeline(race, live=False)
    try:
        data = tl._repr_mimebundle_()
        ET.fromstring(data[SVG_MIME])
        assert data[SVG_MIME] == timeline_svg(tl.saved_bundle())  # the same bundle, drawn
        assert SVG_MIME not in tl._repr_mimebundle_(exclude=[SVG_MIME])
    finally:
        tl.close()
    assert SVG_MIME in SavedTrace(race.trace)._repr_mimebundle_()


def test_a_long_trace_is_pictured_around_its_first_violation():
    """The picture is bounded (an SVG element costs more than a bundle row): at most
    PICTURE_EVENTS events, a third before the first violation, and its header says which."""
    from jupyter_refs.views.saved import SavedTrace
    from jupyter_refs.views.svg import PICTURE_EVENTS

    cluster = Cluster(protocol="dask", network="immediate")
    client = cluster.client()
    for i in range(100):  # a long quiet prefix, then the race forced by hand
        client.scatter(i).result()
    x = client.scatter(123)
    cluster.hold("client:1->scheduler")
    del x
    x = client.scatter(123)  # noqa: F841 - held: the future the race leaves dangling
    cluster.release_holds()
    cluster.run_until_idle()
    first = cluster.violations[0].first_seq
    trace = cluster.trace
    assert len(trace) > 2 * PICTURE_EVENTS
    saved = SavedTrace(trace)
    assert saved.bundle["window"]["next"] - saved.bundle["window"]["first"] > PICTURE_EVENTS
    root = ET.fromstring(saved._repr_mimebundle_()[SVG_MIME])
    seqs = [int(t.text.split(":")[0].split()[1]) for t in root.iterfind(".//svg:circle/svg:title", NS)]
    assert max(seqs) - min(seqs) < PICTURE_EVENTS and min(seqs) <= first <= max(seqs)
    assert f"of {trace.next_seq}" in root.find("svg:text", NS).text
    assert root.findall(".//svg:g[@class='violation']", NS)
