"""An ember refusal raised inside a Ray task reaches the driver as itself: one line, the same class as
locally, not Ray's RayTaskError whose text is the remote traceback (27 lines and more)."""

from __future__ import annotations

import pytest

import ember.data
from ember.errors import EmberError
from tests.data._ray_refusal_udfs import refuse_with_config_error, refuse_with_data_error


def raised(fn) -> BaseException:
    try:
        fn()
    except Exception as error:  # what the user's except clause would see
        return error
    raise AssertionError("nothing was raised")


@pytest.mark.parametrize(
    "build, text",
    [
        (lambda: ember.data.range(4).map(refuse_with_data_error), "column 'x' is a string; cast it first"),
        (lambda: ember.data.range(4).map_batches(refuse_with_config_error), "batch_size=0 must be positive"),
    ],
    ids=["map-DataError", "map_batches-ConfigError"],
)
def test_a_refusal_inside_a_ray_task_is_one_line_at_the_driver(build, text, ray_execution):
    on_ray = raised(lambda: ray_execution(lambda: build().take_all()))
    assert isinstance(on_ray, EmberError)
    assert not type(on_ray).__module__.startswith("ray")  # not RayTaskError(...), the dual class Ray makes
    assert text in str(on_ray) and "\n" not in str(on_ray) and "ray::" not in str(on_ray), str(on_ray)
    assert on_ray.__cause__ is None and on_ray.__suppress_context__


def test_the_same_refusal_run_locally_keeps_its_text():
    assert str(raised(lambda: ember.data.range(4).map(refuse_with_data_error).take_all())).endswith(
        "column 'x' is a string; cast it first"
    )
