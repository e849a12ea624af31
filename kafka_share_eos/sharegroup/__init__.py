"""The share group as a pipeline meets it: its group configs (isolation level, lock duration,
delivery limit) read and set through the admin API, and what a refused request means."""
