"""The US customary units from their definitions (NIST Handbook 44, appendix C), for tests to derive expected values
independently of the project's own tables (`conversion.readers.units`): a test that divided by the code's constant
passed with the imperial bushel in its place."""

FOOT_M = 0.3048
ACRE_M2 = 43_560 * FOOT_M**2  # 4046.8564224
ACRE_HA = ACRE_M2 / 10_000
GALLON_L = 3.785411784  # 231 cubic inches
BUSHEL_L = 35.23907016688  # 2150.42 cubic inches
POUND_KG = 0.45359237
LB_AC_IN_KG_HA = POUND_KG / ACRE_HA  # 1 lb/ac in kg/ha (1.12085115619)
