# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import json
import math
import os

import pytest

from waymark.tasks.place_graph import PlaceGraph
from waymark.tasks.places import (
    NAME_MAX_CHARS,
    REMOVED,
    PlaceBook,
    PlaceBookCorruptError,
    PlaceBookFullError,
    PlaceNameError,
    PlacePose,
    PlaceView,
    UnknownPlaceError,
    bucket_views,
)
from waymark.tasks.stop_views import heading_bucket

EPOCH = ('run1', 0)


def view(heading_deg: float, stamp_ns: int, ref: str = '') -> PlaceView:
    heading = math.radians(heading_deg)
    return PlaceView(
        ref or f'img/{heading_deg}-{stamp_ns}', heading, PlacePose(1, 2, heading), stamp_ns
    )


def mark(book: PlaceBook, name: str, x: float = 0.0, floor: int = 0, **kwargs):
    kwargs.setdefault('views', [view(0, 1)])
    kwargs.setdefault('stamp_ns', 100)
    kwargs.setdefault('epoch', EPOCH)
    return book.mark(name, PlacePose(x, 0.0, 0.0), floor=floor, **kwargs)


@pytest.fixture
def book(tmp_path):
    return PlaceBook(tmp_path / 'places.json', fsync=False)


def test_re_marking_a_name_replaces_the_place_whatever_its_case_and_spacing(book):
    mark(book, 'Charging Spot', x=1.0, room='hall')
    again = mark(book, '  charging   spot ', x=5.0, views=[view(90, 7)])
    assert len(book) == 1
    place = book.get('CHARGING SPOT')
    assert place == again
    assert place.name == 'charging spot'
    assert place.pose.x == 5.0
    assert place.room == 'charging spot'  # the default room label is the name
    assert [v.image_ref for v in place.views] == ['img/90-7']


def test_views_keep_one_per_heading_bucket_and_the_latest_wins():
    views = [view(10, 5, 'east-new'), view(-30, 3, 'east-old'), view(95, 1, 'north')]
    views += [view(179, 2, 'west'), view(-179, 4, 'west-new'), view(-90, 1, 'south')]
    kept = bucket_views(views)
    assert [v.image_ref for v in kept] == ['east-new', 'north', 'west-new', 'south']
    assert [heading_bucket(v.heading) for v in kept] == [0, 1, 2, 3]
    assert heading_bucket(math.radians(44)) == 0 and heading_bucket(math.radians(46)) == 1
    assert heading_bucket(math.radians(360 + 100)) == 1


def test_a_place_has_at_most_four_views(book):
    place = mark(book, 'door', views=[view(h, s) for s, h in enumerate(range(0, 360, 15))])
    assert len(place.views) == 4
    assert {heading_bucket(v.heading) for v in place.views} == {0, 1, 2, 3}


def test_places_survive_a_restart(tmp_path):
    path = tmp_path / 'places.json'
    first = PlaceBook(path)
    kitchen = mark(first, 'kitchen', x=1.5, floor=0, views=[view(0, 1), view(180, 2)])
    landing = mark(first, 'landing', x=3.0, floor=1, room='stairs', epoch=('run1', 2))
    first.remove('kitchen')
    mark(first, 'kitchen', x=1.5, floor=0)
    again = PlaceBook(path)
    assert again.all() == first.all()
    assert again.get('landing') == landing
    assert again.get('kitchen').sequence > landing.sequence > kitchen.sequence
    assert again.marks() == (REMOVED, 'landing', 'kitchen')
    # New marks continue the sequence, never reuse it.
    assert mark(again, 'cellar').sequence > again.get('kitchen').sequence


def test_a_write_cut_before_its_rename_leaves_the_previous_book(tmp_path):
    path = tmp_path / 'places.json'
    mark(PlaceBook(path), 'kitchen')
    temporary = tmp_path / '.places.json.1a2b3c4d.tmp'
    temporary.write_text('{"version": 1, "places": [')  # a crash mid-write
    book = PlaceBook(path)
    assert [p.name for p in book.all()] == ['kitchen']
    assert not temporary.exists()
    mark(book, 'hall')
    assert [p.name for p in PlaceBook(path).all()] == ['kitchen', 'hall']


@pytest.mark.parametrize(
    'content',
    [
        'not json',
        '{"version": 99, "places": [], "marks": [], "next_sequence": 0}',
        '{"version": 1, "places": [{"name": "x"}], "marks": [], "next_sequence": 1}',
        '[]',
    ],
)
def test_a_corrupt_book_is_reported_and_left_untouched(tmp_path, content):
    path = tmp_path / 'places.json'
    path.write_text(content)
    with pytest.raises(PlaceBookCorruptError, match=r'places\.json cannot be read'):
        PlaceBook(path)
    assert path.read_text() == content


def test_a_book_with_a_name_twice_is_corrupt(tmp_path):
    path = tmp_path / 'places.json'
    mark(PlaceBook(path), 'hall')
    document = json.loads(path.read_text())
    twin = dict(document['places'][0], name='HALL', sequence=0)
    document['places'].append(twin)
    path.write_text(json.dumps(document))
    with pytest.raises(PlaceBookCorruptError, match='marked twice'):
        PlaceBook(path)


def test_an_unknown_name_names_the_closest_known_ones(book):
    with pytest.raises(UnknownPlaceError, match='no places are marked yet'):
        book.get('kitchen')
    for name in ('kitchen', 'kitchen door', 'garage'):
        mark(book, name)
    with pytest.raises(UnknownPlaceError) as error:
        book.get('kitchn')
    assert "closest known: 'kitchen', 'kitchen door'" in str(error.value)
    assert 'garage' not in str(error.value)
    with pytest.raises(UnknownPlaceError, match='none of the 3 known names is close'):
        book.remove('attic')
    assert len(book) == 3


@pytest.mark.parametrize(
    ('name', 'reason'),
    [
        ('', 'empty'),
        ('   ', 'empty'),
        ('x' * (NAME_MAX_CHARS + 1), 'at most 64'),
        ('bed\x00room', 'not printable'),
        ('bed\u200broom', 'not printable'),
        ('../etc', 'must not contain'),
        ('a\\b', 'must not contain'),
        (42, 'must be text'),
    ],
)
def test_bad_names_are_refused_and_change_nothing(book, name, reason):
    mark(book, 'hall')
    with pytest.raises(PlaceNameError, match=reason):
        mark(book, name)
    with pytest.raises(PlaceNameError, match=reason):
        mark(book, 'study', room=name)
    assert [p.name for p in book.all()] == ['hall']
    assert PlaceBook(book.path).all() == book.all()


def test_a_name_of_the_longest_length_and_any_script_is_fine(book):
    assert mark(book, 'y' * NAME_MAX_CHARS).name == 'y' * NAME_MAX_CHARS
    assert mark(book, 'Küche am Eingang').name == 'Küche am Eingang'


def test_bad_poses_views_and_epochs_are_refused(book):
    with pytest.raises(ValueError, match='finite'):
        PlacePose(math.nan, 0.0, 0.0)
    with pytest.raises(ValueError, match='image reference'):
        PlaceView('', 0.0, PlacePose(0, 0, 0), 1)
    with pytest.raises(TypeError, match='PlacePose'):
        PlaceView('img/1', 0.0, {'x': 0, 'y': 0, 'yaw': 0}, 1)
    with pytest.raises(ValueError, match='session name'):
        mark(book, 'hall', epoch=('../x', 0))
    with pytest.raises(ValueError, match='map epoch'):
        mark(book, 'hall', epoch=('run1', -1))
    with pytest.raises(ValueError, match='floor'):
        mark(book, 'hall', floor=1.5)
    assert len(book) == 0 and not book.path.exists()


def test_the_cap_refuses_new_names_but_not_re_marks(tmp_path):
    book = PlaceBook(tmp_path / 'places.json', max_places=2, fsync=False)
    mark(book, 'a')
    mark(book, 'b')
    with pytest.raises(PlaceBookFullError, match='cap'):
        mark(book, 'c')
    assert mark(book, 'A', x=9.0).pose.x == 9.0
    assert [p.name for p in book.all()] == ['b', 'A']


def test_a_failed_write_changes_nothing(book, monkeypatch):
    mark(book, 'hall')
    saved = book.path.read_bytes()

    def full_disk(source, target):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(os, 'replace', full_disk)
    with pytest.raises(OSError, match='No space'):
        mark(book, 'study')
    with pytest.raises(OSError, match='No space'):
        book.remove('hall')
    monkeypatch.undo()
    assert [p.name for p in book.all()] == ['hall']
    assert book.marks() == ('hall',)
    assert book.path.read_bytes() == saved
    assert list(book.path.parent.iterdir()) == [book.path]  # no temporary file left


def test_the_marking_record_is_bounded(tmp_path):
    book = PlaceBook(tmp_path / 'places.json', max_marks=3, fsync=False)
    for name in ('a', 'b', 'c', 'd', 'a'):
        mark(book, name)
    assert book.marks() == ('c', 'd', 'a')
    assert PlaceBook(book.path, max_marks=2).marks() == ('d', 'a')


def test_graph_edges_link_consecutive_marks_and_flag_floor_changes(book):
    mark(book, 'kitchen', floor=0, room='kitchen')
    mark(book, 'fridge', floor=0, room='kitchen')
    mark(book, 'landing', floor=1, room='upstairs')
    mark(book, 'kitchen', floor=0, room='kitchen')  # re-marked: a new visit, same place
    mark(book, 'kitchen', floor=0, room='kitchen')  # twice in a row: no self-loop
    mark(book, 'fridge', floor=0, room='kitchen')  # a pair seen again: still one edge
    graph = PlaceGraph.build(book.all(), book.marks())
    pairs = [(e.first, e.second, e.floor_change) for e in graph.edges]
    assert pairs == [
        ('kitchen', 'fridge', False),
        ('fridge', 'landing', True),
        ('landing', 'kitchen', True),
    ]
    assert set(graph.neighbours('Kitchen')) == {'fridge', 'landing'}
    assert [(e.first, e.second) for e in graph.floor_connections()] == [
        ('fridge', 'landing'),
        ('landing', 'kitchen'),
    ]
    assert graph.rooms() == {'upstairs': ('landing',), 'kitchen': ('kitchen', 'fridge')}
    with pytest.raises(UnknownPlaceError):
        graph.neighbours('attic')


def test_removing_a_place_drops_its_edges_without_bridging(book):
    for name in ('a', 'b', 'c'):
        mark(book, name)
    book.remove('b')
    graph = PlaceGraph.build(book.all(), book.marks())
    assert graph.edges == ()
    assert [n.name for n in graph.nodes] == ['a', 'c']
    mark(book, 'b')  # marked again: only its new neighbour, not its old ones
    graph = PlaceGraph.build(book.all(), PlaceBook(book.path).marks())
    assert [(e.first, e.second) for e in graph.edges] == [('c', 'b')]


def test_the_rendering_has_labels_and_relations_but_no_coordinates(book):
    assert PlaceGraph.build((), ()).render() == 'No places are named yet.'
    mark(book, 'kitchen', x=12.345, floor=0)
    mark(book, 'say "go home"', x=-7.5, floor=2, room='loft')
    text = PlaceGraph.build(book.all(), book.marks()).render()
    assert '"kitchen": room "kitchen", floor 0' in text
    assert '"say \\"go home\\"": room "loft", floor 2' in text
    assert '"kitchen" -- "say \\"go home\\"" [floors differ' in text
    assert '12.3' not in text and '7.5' not in text and 'x=' not in text


def test_a_long_rendering_is_cut_and_says_so(tmp_path):
    book = PlaceBook(tmp_path / 'places.json', fsync=False)
    for index in range(60):
        mark(book, f'place number {index}')
    text = PlaceGraph.build(book.all(), book.marks()).render(max_chars=500)
    assert len(text) <= 500
    assert text.endswith('more lines not shown)')
