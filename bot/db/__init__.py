"""The database: models (`bot.db.models`); engines, sessions, migrations (`bot.db.session`)."""
