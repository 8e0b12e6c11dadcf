import pytest


@pytest.fixture
def eager_tasks():
    """Run Celery tasks in-process for this test. The shared session fixture sets this too, but its
    setting can be lost when the Celery configuration loads lazily later; this makes the event tests
    independent of that."""
    from platform_site.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous
