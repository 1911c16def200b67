"""Plugins shipped with the app; each registers its handlers on the bus."""


def install_welcome(bus, outbox):
    """Send a welcome mail to the first user created after start-up."""
    bus.once("user_created", lambda user: outbox.append(f"welcome {user}"))


def install_audit(bus, log):
    bus.on("user_created", lambda user: log.append(("user_created", user)))
    bus.on("user_deleted", lambda user: log.append(("user_deleted", user)))
