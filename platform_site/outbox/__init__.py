"""The task outbox: tasks whose send found the broker down, kept in the database until the broker takes them."""
