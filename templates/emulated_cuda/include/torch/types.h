// What a twin's launcher includes for torch's tensors (torch/types.h), for harvest's CPU emulation: the stand-ins
// of extension.h beside it.
#pragma once
#include <torch/extension.h>
