from eventbus import EventBus
from eventbus.plugins import install_audit, install_welcome


def test_welcome_then_audit():
    bus = EventBus()
    mails, audit = [], []
    install_welcome(bus, mails)
    install_audit(bus, audit)
    bus.emit("user_created", "ann")
    bus.emit("user_created", "bob")
    assert mails == ["welcome ann"]
    assert audit == [("user_created", "ann"), ("user_created", "bob")]


def test_two_once_handlers_both_fire():
    bus = EventBus()
    seen = []
    bus.once("e", lambda: seen.append("a"))
    bus.once("e", lambda: seen.append("b"))
    bus.on("e", lambda: seen.append("c"))
    bus.emit("e")
    bus.emit("e")
    assert seen == ["a", "b", "c", "c"]
