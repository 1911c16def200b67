from eventbus import EventBus
from eventbus.plugins import install_audit, install_welcome


def test_on_and_emit():
    bus = EventBus()
    bus.on("e", lambda x: x + 1)
    bus.on("e", lambda x: x * 2)
    assert bus.emit("e", 5) == [6, 10]


def test_off():
    bus = EventBus()
    h = bus.on("e", lambda: 1)
    bus.off("e", h)
    assert bus.emit("e") == []


def test_once_alone():
    bus = EventBus()
    seen = []
    bus.once("e", seen.append)
    bus.emit("e", 1)
    bus.emit("e", 2)
    assert seen == [1]
    assert bus.listeners("e") == 0


def test_audit_first():
    bus = EventBus()
    mails, audit = [], []
    install_audit(bus, audit)
    install_welcome(bus, mails)
    bus.emit("user_created", "ann")
    assert mails == ["welcome ann"]
    assert audit == [("user_created", "ann")]
