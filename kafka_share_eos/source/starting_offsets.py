"""Where a new share group starts: the ``startingOffsets`` option, applied as the group's
``share.auto.offset.reset``.

Kafka reads that group config when it first initialises one of the group's share-partitions, and
from then on the partition keeps its own start offset: a new value no longer moves it. So the
source sets it only on a group the brokers do not know yet, and before any consumer of its own
joins (the runner resolves the group before it opens a consumer or plans a slot). On a group the
brokers know, the option is left out, with a warning naming the group's setting when that
differs.

The embedded broker keeps no group configs, and its one setting for every group is fixed in the
process that runs it, out of the source's reach: there the option is logged as not applied.

The pinned client (confluent-kafka 2.16.1) cannot read a share group's per-partition state
(Kafka's DescribeShareGroupOffsets), so "the brokers know the group" stands for "the group has
state". It errs on the safe side: measured on Kafka 4.4, a partition from which a group never
acquired a record still takes a new reset, and the source leaves such a group alone too.
"""

from __future__ import annotations

import logging

from kafka_share_eos.errors import ConfigurationError, GroupConfigError
from kafka_share_eos.sharegroup.group_config import (
    AUTO_OFFSET_RESET,
    ShareGroupSettings,
    alter_share_group,
    config_command,
    share_group_exists,
)
from kafka_share_eos.source.options import SourceOptions

log = logging.getLogger("kafka_share_eos.source")

OPTION = "startingOffsets"


def apply_starting_offsets(
    options: SourceOptions, settings: ShareGroupSettings | None
) -> ShareGroupSettings | None:
    """The group's settings once ``startingOffsets`` is applied to a new group (see the module
    docstring); ``settings`` as they are when the option is not set, the group has state, or
    the brokers keep no group configs (``settings`` None: the option is logged as not applied).

    Raises:
        GroupConfigError: the brokers could not say whether the group is new, or refused to
            set its ``share.auto.offset.reset`` (no ALTER_CONFIGS on the group).
    """
    wanted = options.starting_offsets
    if wanted is None:
        return settings
    if settings is None:
        log.warning("kafka-share source: option %s=%s is not applied: the brokers of share "
                    "group %r keep no group configs (as the embedded broker, whose new groups "
                    "start where it was configured: earliest unless started with "
                    "auto_offset_reset or --offset-reset)", OPTION, wanted, options.group_id)
        return None
    group = options.group_id
    try:
        known = share_group_exists(options.consumer_config, group)
    except GroupConfigError as exc:
        raise GroupConfigError(
            f"option {OPTION!r} ({wanted}) needs to know whether share group {group!r} is new, "
            f"and the brokers did not say ({exc})"
        ) from exc
    current = settings.auto_offset_reset
    if known:
        _report_kept(group, wanted, current)
        return settings
    if current != wanted:
        try:
            settings = alter_share_group(options.consumer_config, group,
                                         {AUTO_OFFSET_RESET: wanted})
        except (ConfigurationError, GroupConfigError) as exc:
            command = config_command(options.consumer_config, group, AUTO_OFFSET_RESET, wanted)
            raise GroupConfigError(
                f"option {OPTION!r} asks share group {group!r} to start at {wanted} and the "
                f"source could not set its {AUTO_OFFSET_RESET} ({exc}). Grant ALTER_CONFIGS on "
                f"the group, or set it before the first run: {command}"
            ) from exc
    log.info("kafka-share source: share group %r is new and starts at %s (%s=%s, from option "
             "%s)", group, _position(wanted), AUTO_OFFSET_RESET, wanted, OPTION)
    return settings


def _report_kept(group: str, wanted: str, current: str | None) -> None:
    if current == wanted:
        log.info("kafka-share source: share group %r already has state and continues where it "
                 "left off (%s=%s, as option %s asks)", group, AUTO_OFFSET_RESET, current, OPTION)
        return
    log.warning("kafka-share source: option %s=%s is ignored: share group %r already has state, "
                "which Kafka keeps, and its %s is %s. To move it, stop every consumer of the "
                "group and run kafka-share-groups.sh --reset-offsets, or use a new group",
                OPTION, wanted, group, AUTO_OFFSET_RESET, current)


def _position(value: str) -> str:
    if value.startswith("by_duration:"):
        return f"the first record of the last {value.removeprefix('by_duration:')}"
    return f"the {value} offset"
