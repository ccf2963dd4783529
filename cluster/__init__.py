"""The cluster model shared by the apps (ring: drivers): a target (what to start and how), the
``server.properties`` each node gets, a running cluster of target nodes on a real ZooKeeper driven
from outside, and the admin writes a check or a chaos client makes. Imports no app."""
