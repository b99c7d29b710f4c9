"""The dashboard's routes, one ``APIRouter`` module per concern (included by web/app.py)."""
