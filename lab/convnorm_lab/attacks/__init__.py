"""Adversarial attacks and adversarial training: FGSM, PGD, "free" adversarial
training, and the SimBA black-box attack."""
from .free import free_adversarial_step
from .gradient import EPS, STEP, attack_accuracy, fgsm, pgd
from .simba import SimBAResult, dct_matrix, simba, simba_order

__all__ = ["EPS", "STEP", "SimBAResult", "attack_accuracy", "dct_matrix", "fgsm", "free_adversarial_step",
           "pgd", "simba", "simba_order"]
