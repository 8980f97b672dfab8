"""A person's own nerve: ``nerve setup`` and ``nerve setup --undo`` (:mod:`nerve.setup.plan`),
the changes and their manifest (:mod:`nerve.setup.changes`), the user service
(:mod:`nerve.setup.service`)."""
