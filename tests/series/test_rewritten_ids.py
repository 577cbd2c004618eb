"""Reading the id `git send-email` gave a run's first mail (no database)."""

from __future__ import annotations

import datetime as dt

import pytest

from bot.series.rewritten_ids import run_start


@pytest.mark.parametrize(("msgid", "expected"), [
    ("20200426022650.10355-1-xc-racer2@live.ca",
     (dt.datetime(2020, 4, 26, 2, 26, 50, tzinfo=dt.UTC), "xc-racer2@live.ca")),
    ("20201014101402.18271-1-Sergey.Semin@baikalelectronics.ru",
     (dt.datetime(2020, 10, 14, 10, 14, 2, tzinfo=dt.UTC), "sergey.semin@baikalelectronics.ru")),
    ("1561690876-20977-1-git-send-email-wen.yang99@zte.com.cn",
     (dt.datetime(2019, 6, 28, 3, 1, 16, tzinfo=dt.UTC), "wen.yang99@zte.com.cn")),
    ("20240826122955.2674569-3-eadavis@qq.com",  # the run's third mail
     (dt.datetime(2024, 8, 26, 12, 29, 55, tzinfo=dt.UTC), "eadavis@qq.com")),
])
def test_a_runs_id_gives_its_time_and_sender(msgid, expected):
    assert run_start(msgid) == expected


@pytest.mark.parametrize("msgid", [
    "20201399999999.1-1-a@example.org",  # no time
    "20240404-topic-v1-1-abc@kernel.org",  # b4's
    "BN6PR04MB0660@BN6PR04MB0660.namprd04.prod.outlook.com",
    "1561690876-20977-1-git-send-email-",  # no sender
])
def test_other_ids_give_nothing(msgid):
    assert run_start(msgid) is None
