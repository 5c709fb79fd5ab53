"""The red-flag concept lexicon: EN/IT word lists (colloquial phrasing, dialect and typos included) for the
symptoms and contexts the hand-written red-flag rules (chatbot.stages.redflag_rules) combine. Terms use the
``text_match`` syntax: ``*`` a word prefix, ``a|b`` alternatives for one word, ``#num``, ``#lt20``, ``#lt37``,
``#ge38`` numbers."""

from __future__ import annotations

CONCEPTS: dict[str, list[str]] = {
    # context
    "PREG": [
        "pregnan*", "preggo", "preggers", "expecting", "#lt37 week*|wk*|wks", "37|38|39|40|41|42 week*|wk*",
        "trimester*", "gestation*", "antenatal", "bump", "incinta", "gravidanz*", "gravida",
        "#num settiman*", "trimestre", "dolce attesa", "aspetto un bambino",
    ],
    "POSTPARTUM": [
        "gave birth", "given birth", "after birth", "after the birth", "since the birth", "after delivery",
        "after giving birth", "postpartum", "post partum", "postnatal", "c section", "caesarean",
        "dopo il parto", "ho partorito", "post parto", "puerperio", "cesareo",
    ],
    # the baby is born, in words POSTPARTUM lacks: bleeding then is lochia unless heavy or painful (with
    # POSTPARTUM, a rule's UNLESS, not a context)
    "AFTER_BIRTH": [
        "giving birth", "since delivery", "was born", "were born", "lochia", "aver partorito", "e nato", "e nata",
        "dalla nascita", "dopo la nascita", "lochi", "lochiazion*",
    ],
    "SELF": [
        "i", "my", "me", "myself", "we", "our", "she", "he", "now", "right now", "today", "tonight",
        "this morning", "suddenly", "started", "ho", "sto", "sono", "mi", "mio", "mia", "miei", "mie", "io",
        "abbiamo", "nostro", "nostra", "adesso", "ora", "oggi", "stanotte", "stamattina", "improvvisamente",
        "all improvviso", "iniziato", "iniziata",
    ],
    "BABY": [
        "baby", "babies", "babys", "newborn*", "new born", "infant*", "bub", "little one", "neonat*",
        "bambin*", "bimb*", "lattant*", "piccolin*", "babyagenewborn", "babyageolder", "criatur*", "creatur*",
        "piccirill*", "piccerell*",
    ],
    "NEWBORN": [
        "newborn*", "new born", "neonat*", "babyagenewborn", "just born", "appena nat*", "under 3 months",
        "under three months", "sotto i 3 mesi", "sotto i tre mesi",
    ],
    # symptoms
    "BLEED": [
        "bleed*", "bled", "bloody", "haemorrhag*", "hemorrhag*", "losing blood", "lost blood", "blood loss",
        "passing blood", "passed blood", "blood clot*", "blood coming", "lot of blood", "lots of blood",
        "so much blood", "blood everywhere", "blood in my", "sanguinam*", "sanguinan*", "sanguino", "sanguina",
        "sanguinare", "emorragi*", "perdo sangue", "perdite di sangue", "perdita di sangue", "sangue dalla",
        "sangue rosso", "molto sangue", "tanto sangue", "tantissimo sangue", "perdendo sangue", "esce sangue",
        "coaguli di sangue", "perdite rosse", "perdite marroni", "soak* through * pad*", "soak* through pad*",
        "soak* a pad", "soak* pads", "inzupp* l assorbente", "inzupp* * assorbent*",
    ],
    "OTHER_BLEED": [
        "gum", "gums", "nose", "nosebleed*", "gengiv*", "naso", "piles", "haemorrhoid*", "hemorrhoid*",
        "emorroid*", "nipple*", "capezzol*", "cord", "cordone", "umbilical", "ombelic*", "stump", "moncone",
    ],
    "HEAVY": [
        "heavy", "heavily", "a lot", "lots", "loads", "so much", "too much", "soak*", "clot", "clots", "gush*",
        "pouring", "massive", "abbondant*", "tanto", "tantissimo", "molto", "forte", "copios*", "coagul*",
        "grumi", "inzupp*", "fiotti", "assorbent*", "clotting", "clotted",
    ],
    "PAIN": [
        "pain*", "ache*", "aching", "hurt*", "cramp*", "agony", "dolor*", "male", "mal", "fitt*", "crampi",
        "doloros*",
    ],
    "SEVERE": [
        "severe*", "terribl*", "unbearabl*", "excruciat*", "agonis*", "agoniz*", "worst", "really bad",
        "very bad", "so bad", "intense", "sharp", "stabbing", "extreme*", "can not stand", "doubled over",
        "screaming", "crippling", "forte", "fortissim*", "insopportabil*", "atroce", "lancinant*", "acut*",
        "tremend*", "intens*", "terribil*", "fortissimo", "da morire", "non resisto",
    ],
    "MOVE": [
        "move*", "moving", "movement*", "kick*", "wriggl*", "flutter*", "active", "activity", "movimen*",
        "muov*", "muove", "calci", "calcetti", "scalci*",
        # "calcio" alone is also calcium ("quanto calcio serve al giorno? ... non prendo latte" fired reduced fetal
        # movements on three calm reply-set questions, session 33): a kick only with an article or the baby
        "un calcio", "nessun calcio", "qualche calcio", "il suo calcio", "calcio del bambino", "calcio del bimbo",
        "calcio della bambina", "calcio della bimba",
    ],
    "KICKS": ["kick*", "calci", "calcetti", "scalci*"],
    "TOO_EARLY_TO_FEEL": ["#lt20 week*|wk*|wks|settiman*"],
    "REDUCED": [
        "less", "fewer", "reduc*", "slow*", "stopped", "stop*", "not", "no", "nothing", "quiet*", "decreas*",
        "hardly", "barely", "meno", "ridott*", "diminuit*", "non", "fermo", "ferma", "smesso", "nessun*",
        "niente", "rallentat*", "calat*", "quasi",
    ],
    # session 27: the baby moves little ("il bimbo si muove poco poco", "l'ho sentita pochissimo", "moving very
    # little"): said of the baby (third person), not "mi muovo poco" (I don't exercise much); 3 words apart at most
    "BABY_MOVES": [
        "si muove", "si muov*", "mosso", "mossa", "l ho sentit*", "la sento", "lo sento", "moving", "moves", "moved",
        "kicking",
    ],
    "LITTLE": ["poco", "pochissimo", "pochino", "very little", "so little"],
    "WATERS": [
        "waters", "water break*", "water broke", "amniotic", "rupture* membrane*", "membranes rupture*",
        "rottura delle acque", "rompono le acque", "rompe le acque", "rottura del sacco", "liquido amniotico",
    ],
    "WATERS_NOW": [
        "waters broke", "waters broken", "waters have broken", "waters went", "waters gone", "waters just",
        "water broke", "water broken", "waters are leaking", "waters leaking", "leaking fluid", "leaking clear",
        "fluid leaking", "gush of fluid", "gush of water", "gushing fluid", "rotto le acque", "rotte le acque",
        "si sono rotte", "acque rotte", "rotto il sacco", "perdo liquido", "perdita di liquido",
        "perdite di liquido", "perdendo liquido",
    ],
    "EARLY": [
        "early", "premature*", "preterm", "pre term", "too soon", "before 37", "prima del termine",
        "pretermine", "precoc*", "in anticipo", "prima delle 37", "#lt37 week*|wk*|wks|settiman*",
        "green", "brown", "smell*", "verde", "marrone", "maleodorant*",
    ],
    "HEADACHE": [
        "headach*", "head ache", "head hurts", "head is killing", "head is pounding", "head pounding",
        "migrain*", "mal di testa", "cefalea", "emicrania", "testa mi scoppia", "dolore alla testa",
    ],
    "VISION": [
        "blur*", "vision", "spots", "flash*", "sparkl*", "stars", "double", "can not see", "eyesight", "sight",
        "seeing", "vista", "vedo", "vedere", "vedevo", "offuscat*", "annebbiat*", "sfocat*", "lampi", "puntini",
        "lucine", "macchie", "appannat*", "luci",
        # "can not see" in Italian: said with "non", which would otherwise negate the sign
        "non ci vedo", "non ci vedevo", "non ci vede", "non vedo bene", "non riesco a vedere",
    ],
    "CHEST": ["chest", "petto", "torace", "toracic*", "sternum", "sterno"],
    "CHEST_SYMPTOM": [
        "pain*", "ache*", "hurt*", "tight*", "pressure", "crushing", "squeez*", "dolor*", "male", "oppression*",
        "peso", "stretta", "costrizion*",
    ],
    "BREATHING": [
        "can not breathe", "cant breathe", "struggling to breathe", "struggle to breathe", "not breathing",
        "stopped breathing", "gasping", "turning blue", "blue lips", "lips are blue", "lips blue",
        "non riesco a respirare", "non respira", "non riesce a respirare", "fatica a respirare",
        "labbra blu*", "cianotic*", "smesso di respirare", "nun respira", "turned|went|gone|going blue",
        "divent* blu|viola", "diventando blu|viola",
    ],
    # an allergic reaction reaching the airway (anaphylaxis, NHS: call 999 for swollen lips, mouth or tongue with a
    # throat that feels tight, a hoarse voice, trouble swallowing or breathing): the signs in patients' words
    "MOUTH_PART": ["lip", "lips", "tongue", "mouth", "labbra", "labbro", "lingua", "bocca"],
    "SWOLLEN": [
        "swollen", "swelling", "swell*", "puffy", "puffed", "puffing", "gonfi*", "gonfior*", "ingross*",
    ],
    "THROAT": ["throat", "gola"],
    "THROAT_FEEL": [
        "tight*", "funny", "scratch*", "closing", "closed", "swell*", "swollen", "weird", "strange", "itch*",
        "chiud*", "chius*", "strett*", "stringe", "strana", "strano", "gonfi*", "prud*", "pizzic*", "graffi*",
    ],
    "VOICE_CHANGE": [
        "croaky", "hoarse", "husky", "raspy", "rauc*", "roca", "voice sounds funny|strange|different|weird",
        "voice is funny|strange|different|weird", "voce strana|diversa|cambiata",
    ],
    "SWALLOW_HARD": [
        "can not swallow", "cant swallow", "struggling to swallow", "trouble swallowing", "difficulty swallowing",
        "hard to swallow", "non riesce a deglutire", "non riesco a deglutire", "fatica a deglutire",
        "difficolta a deglutire", "non riesce a mandare giu", "non riesco a mandare giu", "fa fatica a deglutire",
    ],
    "WHEEZE": ["wheez*", "fischi*", "sibil*", "noisy breathing", "respiro rumoroso"],
    "THROAT_CLOSING": [
        "throat * closing", "throat closing", "throat is closing", "gola si chiude", "gola si sta chiudendo",
        "chiude la gola", "chiudendo la gola",
    ],
    # session 31: a known allergy or an allergen named with a breathing or throat sign; a sting with faintness
    # (NHS anaphylaxis: call 999 for breathing or throat signs, feeling faint or lightheaded, clammy skin, confusion)
    "ALLERGIC": [
        "allergic", "allergy", "allergies", "allergico", "allergica", "allergici", "allergiche", "allergia",
        "allergie", "anaphyla*", "anafilass*", "epipen", "epi pen", "adrenaline pen", "penna di adrenalina",
    ],
    # the allergy ruled out ("era reflusso non allergia", "no allergies"): cancels allergic_reaction_breathing
    "NOT_ALLERGIC": [
        "not an allergy", "not allergic", "no allergies", "no allergy", "not allergies", "non allergia",
        "non e allergia", "non era allergia", "non e un allergia", "non era un allergia", "niente allergie",
        "nessuna allergia", "non allergico", "non allergica", "non sono allergic*", "non e allergic*",
    ],
    "THROAT_TIGHT": [
        "tight*", "closing", "closed", "swell*", "swollen", "strett*", "stringe", "chius*", "chiud*", "gonfi*",
    ],
    "CHEST_TIGHT": [
        "tight chest", "chest is tight", "chest feels tight", "chest feeling tight", "chest tight", "petto chiuso",
        "petto stretto", "oppressione al petto", "peso sul petto", "mi stringe il petto",
    ],
    "STING": [
        "stung", "sting", "stings", "stinger", "wasp*", "bee", "bees", "hornet*", "vespa", "vespe", "ape", "api",
        "calabron*", "punto da", "punta da", "puntura", "punture", "pungiglione",
    ],
    "FAINT_SIGN": [
        "clammy", "lightheaded", "light headed", "faint", "feels faint", "feeling faint", "dizzy", "muddled",
        "confused", "went down", "sudato freddo", "sudata fredda", "sudore freddo", "gira la testa",
        "giramenti di testa", "capogiro", "svenire", "confus*", "stordit*", "pallid*", "grey", "gray",
    ],
    "STROKE_SIGN": [
        "face droop*", "drooping face", "droopy face", "face is drooping", "face has dropped", "face dropped",
        "one side of my face", "one side of his face", "one side of her face", "side of face",
        "slurred", "slurring", "speech slurr*", "can not speak properly", "can not lift * arm", "arm weak*",
        "weak arm", "arm is weak", "arm went weak",
        "numb on one side", "one side numb", "one side of my body", "bocca storta", "faccia storta",
        "viso storto", "bocca cadente", "parla in modo strano", "parole impastate", "parla impastato", "biascica",
        "non riesce a parlare",
        "non riesco a parlare", "braccio debole", "non riesce ad alzare", "non riesco ad alzare",
        "paresi", "meta del viso", "meta della faccia", "lato del viso", "intorpidit* da un lato",
    ],
    "STROKE_WORD": ["stroke", "ictus"],
    "SEIZURE": [
        "seizur*", "siezur*", "convuls*", "having a fit", "had a fit", "has a fit", "fitting", "epileptic fit",
        "fits", "crisi epilettic*", "attacco epilettic*", "shaking and unresponsive", "jerking",
    ],
    # jerking limbs said without the word "seizure": a seizure whoever it is about (the subject may be sentences away)
    "SEIZURE_LIMBS": [
        "rhythmic jerking", "jerking * arms", "jerking * * arms", "arms and legs jerking", "arms and legs were jerking",
        "scatti * braccia", "scatti * * braccia", "scatti * gambe", "braccia e gambe a scatti",
        "scosse * braccia", "scosse * * braccia", "scatti ritmici", "scosse ritmiche",
    ],
    "FEVER": [
        "fever*", "feverish", "has a temperature", "have a temperature", "got a temperature", "high temperature",
        "running a temperature", "temperature of #num", "temperature is #num", "temp of #num", "high temp",
        "temp|temperature|temperatura|febbre|fever #ge38",
        "feels hot", "feel hot", "very hot", "burning up", "#ge38 c|degrees|gradi|deg", "febbr*",
        "febbricitant*", "temperatura alta", "temperatura di #num", "temperatura a #num", "scotta", "scottava",
        "caldissim*",
    ],
    "FLOPPY": [
        "floppy", "limp", "unresponsive", "not responding", "will not wake", "hard to wake", "difficult to wake",
        "can not wake", "lethargic", "listless", "bulging fontanelle", "rash that does not fade", "molle", "mollo",
        "floscio", "floscia", "flaccid*", "non reagisce", "non si sveglia", "non risponde", "fontanella gonfia",
        "collo rigido", "inerte", "non si muove piu",
        "non se move|mov* piu|cchiu", "nun se move|mov*",
    ],
    # session 27: not feeding is a danger sign in a newborn, not in a 11-month-old who spits out vegetables
    # (rule 4 of feverish_or_floppy_newborn, cancelled by OLDER_BABY)
    "NOT_FEEDING": [
        "not feeding", "will not feed", "refusing feeds", "refusing to feed", "rifiuta il latte", "non mangia",
    ],
    "SELF_HARM": [
        "kill* myself", "kill my self", "suicid*", "end my life", "end it all", "take my own life",
        "harm* myself", "hurt* myself", "self harm*", "cut* myself", "not want to live", "not want to be here",
        "not want to be alive", "better off without me", "better off dead", "want to die", "wish i was dead",
        "wish i were dead", "want to be dead", "wanna be dead", "no reason to live",
        "want to hurt|harm|kill|shake|smother",
        "thought* of hurting|harming|killing|shaking|smothering", "thought* about hurting|harming|killing",
        "urge* to hurt|harm|kill|shake", "i might hurt|harm|kill|shake", "i could hurt|harm|kill|shake",
        "i will hurt|harm|kill|shake", "i ll hurt|harm", "i may hurt|harm", "shook my baby",
        "uccidermi", "ammazzarmi", "togliermi la vita", "farla finita", "farmi del male", "farmi male",
        "non voglio piu vivere", "voglio morire", "vorrei morire", "voglio essere morta", "voglio essere morto",
        "vorrei essere morta", "vorrei essere morto", "vorrei sparire", "pensier* di fare del male",
        "pensier* di fare male", "paura di fare del male", "paura di fare male", "voglio fare del male",
        "voglio fare male", "vorrei fare del male", "potrei fare del male", "fare del male a mio*",
        "fare del male a mia", "fare del male al mio", "fare del male alla mia", "scuotere il mio",
        "autolesion*", "tagliarmi", "meglio senza di me", "pensieri di uccidere",
        "never wake up again", "and never wake up", "not wake up again", "to not wake up", "so i do not wake up",
        "per non svegliarmi piu", "per non svegliarsi piu", "non svegliarmi mai piu", "non risvegliarmi piu",
        "buttarmi|lanciarmi dalla|dal|giu|sotto", "mi butto|buttassi|lanciassi dalla|dal|giu|sotto",
        "throw myself off|under", "throw myself in front", "jump off a|the bridge|roof|balcony",
        "non vedo motivi|motivo per restare|vivere", "nessun motivo per vivere|restare", "no reason to stay|go on",
        "le|gli tappo la bocca", "tapparle|tappargli la bocca", "pillow over her|his face",
    ],
    # an act of self-injury told in the first person (session 13): self-harm whatever frames the message
    # ("mi sono tagliata le braccia ... ma tutto ok"), a present danger for ``present_danger``
    "SELF_INJURY": [
        "cut my arms|wrists|legs|thighs|arm|wrist|leg|thigh", "cutting my arms|wrists|legs|thighs|arm|wrist",
        "been cutting myself|again", "burned|burnt myself on purpose",
        "mi sono tagliat* le|i|il braccia|polsi|polso|braccio|gambe|cosce",
        "mi taglio le|i|il braccia|polsi|gambe|cosce",
        "tagliat* le braccia|gambe|cosce", "tagliat* i polsi", "mi sono ferit* apposta", "mi sono bruciat* apposta",
    ],
    # a sign that makes a present statement of danger (``present_danger``), no rule of its own
    "FOAM": ["schiuma alla|dalla bocca", "bocca piena di schiuma", "foam* at the mouth", "bava alla bocca"],
    "OVERDOSE": [
        "overdos*", "over dose", "took too many", "taken too many", "take too many", "too many pills",
        "too many tablets", "too many paracetamol", "whole packet", "whole box", "whole bottle",
        "swallowed * pills", "swallowed a battery", "swallowed a button", "swallowed bleach",
        "accidentally took", "accidentally taken", "accidentally swallowed", "ingested", "sovradosaggio",
        "troppe pastiglie", "troppe compresse", "troppe pillole", "troppi farmaci", "troppo paracetamolo",
        "intera confezione", "scatola intera", "tutta la confezione", "tutto il flacone", "ha ingerito",
        "ha inghiottito", "ho ingerito", "ho preso troppe", "ho preso troppi", "per sbaglio ho preso",
        "accidentally gave", "accidentally given", "by mistake instead", "ho dato per sbaglio",
        "gli ho dato per sbaglio", "le ho dato per sbaglio", "dato per sbaglio",
    ],
    "SWALLOWED": [
        "swallowed", "has eaten", "ate", "ingerito", "inghiottito", "ha mangiato", "ingoiato", "ingoiata", "ingoiati",
        "ingoiate", "si e mangiat*", "s e mangiat*", "s ha magnat*", "s e magnat*", "se magnat*",
    ],
    "MEDS": [
        "pills", "tablets", "medicine*", "capsules", "battery", "batteries", "bleach", "pastigli*", "compress*",
        "pillol*", "farmac*", "pila", "pile", "batteri*", "candeggina", "detersivo",
        "mothball*", "naftalina", "antitarme",
    ],
    # session 25: a baby under 13 weeks by age ("6 weeks old", "ha 6 settimane"; text_match's age token), for a
    # fever anywhere in the message (a fever under 3 months needs a doctor the same day however well the baby looks)
    "YOUNG_BABY": ["babyagenewborn"],
    # session 27: a baby of 3 months or more by age ("9 month old", "bimbo di 7 mesi"), or a toddler: "my baby has a
    # temp" is then not the newborn's fever rule (38.3 in a playful 9-month-old fired it); a newborn in the same
    # message still fires rule 0 (NEWBORN + FEVER), and a floppy or breathless baby rules 2 and 3
    "OLDER_BABY": ["babyageolder", "toddler*"],
    "FEVER_READING": ["#temp", "#ge38 c|degrees|gradi|deg"],  # a thermometer's reading, not the word "fever"
    # more of a medicine gone than was meant: with a child or drowsiness, a poisoning (session 25)
    "MANY_TAKEN": [
        "ne ha prese tante", "ne ha presi tanti", "ne ha prese parecchie", "ne ha presi parecchi", "ne ha prese molte",
        "ne mancano", "quasi vuota", "quasi vuoto", "mezza vuota", "mezzo vuoto", "nearly empty", "almost empty",
        "half empty", "some are missing", "few are missing", "are missing", "missing from", "took a load", "took loads",
        "taken loads", "took a lot of", "taken a lot of", "had a lot of them", "ate a lot of them",
    ],
    "DRUG_FORM": ["drops", "gocce", "sleeping", "sonnifer*", "iron", "ferro", "vitamin*", "syrup", "sciroppo"],
    # session 27: a child who ate or drank a quantity of medicine ("ha mangiato 8 o 10 delle mie compresse di ferro",
    # "ate some of his grandad's heart pills"): a number or an amount word between the verb and the medicine
    "ATE_OR_DRANK": ["swallowed", "has eaten", "ate", "eaten", "drank", "drunk", "ha mangiato", "ha mangiate",
                     "ha bevuto", "ingerito", "inghiottito", "ingoiat*", "si e mangiat*", "si e bevut*"],
    "QUANTITY": [  # an amount; the Italian partitives too ("ha mangiato delle pastiglie")
        "#num", "some", "several", "few", "handful", "half", "lots", "loads", "all", "whole", "alcune", "alcuni",
        "diverse", "diversi", "tante", "tanti", "parecchie", "parecchi", "mezza", "mezzo", "manciata", "qualche",
        "delle", "dei", "degli", "della", "tutto", "tutta", "tutte", "tutti",
    ],
    # a past scare that is over ("last year he ate some of my iron tablets, the hospital said he was fine")
    "LONG_AGO": ["last year", "last month", "months ago", "years ago", "when he was", "when she was", "l anno scorso",
                 "il mese scorso", "mesi fa", "anni fa", "quando aveva"],
    "TABLETS": ["pills", "tablets", "capsules", "pastigli*", "compress*", "pillol*", "capsul*", "medicine*",
                "farmac*", "sciroppo", "syrup", "gocce", "drops", "vitamin*"],
    # session 27: a button battery or magnets gone (not seen swallowed) with a child: A&E now, however well the child
    # looks ("manca una pila piatta rotonda ... lei sta benissimo")
    "BUTTON_BATTERY": [
        "button batter*", "coin batter*", "coin cell*", "watch batter*", "lithium batter*", "round flat batter*",
        "flat round batter*", "pila a bottone", "pile a bottone", "pila piatta", "pile piatte", "pila rotonda",
        "pile rotonde", "batteria a bottone", "batterie a bottone", "batteria piatta", "batterie piatte",
        "pila al litio", "pile al litio", "magnet*", "calamit*",
    ],
    "GONE": [
        "missing", "can not find", "could not find", "cannot find", "not find it", "not find them", "disappeared",
        "is gone", "are gone", "was gone", "were gone", "manca", "mancano", "mancava", "mancavano", "non la trov*",
        "non le trov*", "non lo trov*", "non li trov*", "non trov*", "sparit*", "scompars*", "non c e piu",
    ],
    "NONE_GONE": [
        "none are missing", "none missing", "nothing is missing", "nothing missing", "none of them are missing",
        "non manca niente", "non manca nulla", "non ne manca", "non mancano", "non manca nessun*",
    ],
    # a small child's age: "my 2 year old", "ha 3 anni", "my 18mo"
    "SMALL_CHILD_AGE": ["#lt6 year*|yr*|yrs|yo|anni|anno", "#lt37 mo|mos|mth*|month*|mesi|mese"],
    "BATTERY_WORD": ["battery", "batteries", "pila", "pile", "batteria", "batterie"],
    "ROUND_FLAT": ["round", "flat", "coin", "button", "rotond*", "tond*", "piatt*", "bottone"],
    # a child who can open a bottle (not "baby": "il bimbo" / "the baby" is also the one in the womb)
    "CHILD": [
        "toddler*", "son", "daughter", "kid", "kids", "child", "children", "figlio", "figlia", "figliolett*",
        "babyageolder",
    ],
    "DROWSY": [
        "hard to wake", "won't wake", "will not wake", "can not wake", "barely responding", "not responding",
        "not making sense", "fatica a rispondere", "fatica a rispondermi", "non risponde", "non si sveglia",
        "mezza addormentata", "mezzo addormentato", "very drowsy", "so drowsy", "sonnolent*", "intontit*",
    ],
    # obstetric cholestasis: itching of the palms and soles late in pregnancy (session 25)
    "ITCH": ["itchy", "itching", "itch", "itches", "prurito", "prude", "prudono", "gratto", "grattarmi"],
    # "my palms and feet are fine", "mani e piedi nessun prurito": the sign said to be absent
    "HANDS_FEET_FINE": [
        "feet are fine", "feet are absolutely fine", "feet are totally fine", "feet are ok", "feet are okay",
        "feet are not itchy", "feet aren't itchy", "feet fine", "piedi nessun prurito", "piedi niente",
        "piedi non prudono", "piedi vanno bene", "piedi tutto bene", "piedi nulla",
    ],
    "HANDS_FEET": [
        "palms", "soles", "hands and feet", "feet and hands", "palmi", "piante dei piedi", "pianta dei piedi",
        "mani e piedi", "mani e alle piante", "mani e ai piedi", "piedi e mani", "soles of my feet",
    ],
    "COLLAPSE": [
        "unconscious", "passed out", "fainted", "collapsed", "not waking up", "svenut*", "svenimento",
        "privo di sensi", "priva di sensi", "incosciente", "perso conoscenza", "perso i sensi",
    ],
    # the umbilical cord out before the baby: call an ambulance (not the cord stump of a newborn)
    "CORD_PROLAPSE": [
        "cord prolapse*", "prolapsed cord", "prolapsed umbilical cord", "cord is coming out", "cord coming out",
        "cord came out", "cord is hanging out", "cord hanging out", "see the cord", "feel the cord",
        "cord before the baby", "prolasso del cordone", "prolasso di funicolo", "prolasso del funicolo",
        "cordone prolassato", "uscito il cordone", "esce il cordone", "uscendo il cordone", "vedo il cordone",
        "sento il cordone", "cordone e uscito", "cordone che esce", "cordone prima del bambino",
        "cordone ombelicale e uscito", "uscito il cordone ombelicale",
    ],
}  # fmt: skip
