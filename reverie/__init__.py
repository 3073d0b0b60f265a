from reverie.models import *
