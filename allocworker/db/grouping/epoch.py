"""The topology's epoch: a token that every change to the domain a root
lies in replaces (a level's domains, a provider's aggregates, a provider
deleted, an import pass), so that a worker may keep roots' labels
between transactions for as long as the epoch it reads is the one it
kept them under (``groups.kept``). A token, not a counter: one that a
rolled-back writer made up is never seen by anyone else."""

import secrets

import sqlalchemy as sa

from allocworker.db import schema

_e = schema.topology_epoch


def token():
    """A new token, for the epoch or a group's members."""
    return secrets.randbits(63)


def column():
    """The epoch as a column, read beside a group's lock."""
    return sa.select(_e.c.token).where(_e.c.id == 1).scalar_subquery()


def moved(conn):
    """Replace the epoch: the transaction changed some root's domain."""
    conn.execute(sa.update(_e).where(_e.c.id == 1).values(token=token()))
