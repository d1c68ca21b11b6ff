// (emulated: see emulated.h)
#pragma once
