import sys

from voxnode.cli import main

sys.exit(main())
