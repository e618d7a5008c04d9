"""Demo material for `manage.py seed_demo`: people, fictional models, instructions and answers.

Everything here is hand-written for the demo. The models, their makers, the companies and the city
in the texts are fictional; the answers are deliberately uneven (some are good, some break the
instruction, get a fact or a sum wrong, or slip out of character) so that scoring them by the
POLLUX criteria is worth doing. Instructions are bound to real catalogue leaves by their full path.

`demo_seed()` writes all of it idempotently: rows are found by username, (name, version) or
external_id, so a second run creates nothing (and leaves rows seeded earlier as they are, even
if a text here has changed since).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from demo.demo_guidelines import demo_guidelines_ensure
from material.models import Answer, Instruction, LanguageModel
from panels.models import Expert, Membership, Panel
from quality.control import control_reference_criteria
from quality.exams import ReferenceInput, exam_create, exam_item_add, exam_references_set
from quality.models import Exam, ExamMode
from taxonomy.models import Task

# Fixed on purpose: the demo prints it and the README names it. seed_demo refuses to run under
# production settings unless forced, so these accounts never appear there by accident.
DEMO_PASSWORD = "pollux-demo"  # noqa: S105 -- a published demo password, see above
# The expert the README and the banner suggest logging in as: member of the panels that score
# every answer (Crowd: critical and subjective; Editing: general), so her queue is never empty.
DEMO_EXPERT = "anna"
DEMO_SOURCE = "Pollux Studio demo"


@dataclass(frozen=True)
class DemoPerson:
    username: str
    first_name: str
    last_name: str
    panels: tuple[str, ...] = ()
    profile: dict[str, Any] = field(default_factory=dict)


DEMO_ADMIN = DemoPerson("admin", "Ирина", "Кузнецова")
DEMO_SUPERVISOR = DemoPerson(
    "supervisor", "Сергей", "Павлов", panels=("crowd", "editing", "science", "literature")
)
# Every panel has at least two members, so domain and task criteria (overlap 2) can be covered;
# all six sit in Crowd, so critical criteria (overlap 5) can be too.
DEMO_EXPERTS: tuple[DemoPerson, ...] = (
    DemoPerson(
        "anna",
        "Анна",
        "Соколова",
        panels=("crowd", "editing", "literature", "character", "translation"),
        profile={
            "education": "Высшее, МГУ им. М. В. Ломоносова, филологический факультет",
            "field_of_expertise": "русский язык, литературное редактирование",
            "profession": "литературный редактор",
            "llm_experience_years": 2,
            "region": "Москва",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "boris",
        "Борис",
        "Лебедев",
        panels=("crowd", "science", "stem", "qa", "code"),
        profile={
            "education": "Кандидат физико-математических наук, МФТИ",
            "field_of_expertise": "общая физика, методика преподавания",
            "profession": "доцент кафедры физики",
            "llm_experience_years": 3,
            "region": "Долгопрудный",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "vera",
        "Вера",
        "Никитина",
        panels=("crowd", "editing", "law", "journalism"),
        profile={
            "education": "Высшее юридическое, СПбГУ",
            "field_of_expertise": "гражданское и договорное право",
            "profession": "юрист по договорной работе",
            "llm_experience_years": 1,
            "region": "Санкт-Петербург",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "grigory",
        "Григорий",
        "Орлов",
        panels=("crowd", "code", "stem", "science"),
        profile={
            "education": "Высшее, ИТМО, прикладная математика и информатика",
            "field_of_expertise": "разработка на Python и C++, анализ данных",
            "profession": "ведущий разработчик",
            "llm_experience_years": 4,
            "region": "Новосибирск",
            "languages": "русский, английский",
        },
    ),
    DemoPerson(
        "daria",
        "Дарья",
        "Морозова",
        panels=("crowd", "translation", "literature", "law"),
        profile={
            "education": "Высшее, МГЛУ, переводческий факультет",
            "field_of_expertise": "письменный перевод с английского, юридический перевод",
            "profession": "переводчик",
            "llm_experience_years": 2,
            "region": "Казань",
            "languages": "русский, английский, немецкий",
        },
    ),
    DemoPerson(
        "egor",
        "Егор",
        "Волков",
        panels=("crowd", "editing", "qa", "journalism", "character"),
        profile={
            "education": "Высшее, УрФУ, факультет журналистики",
            "field_of_expertise": "журналистика, проверка фактов",
            "profession": "редактор отдела проверки фактов",
            "llm_experience_years": 3,
            "region": "Екатеринбург",
            "languages": "русский, английский",
        },
    ),
)


@dataclass(frozen=True)
class DemoModel:
    key: str
    name: str
    version: str
    provider: str


DEMO_MODELS: tuple[DemoModel, ...] = (
    DemoModel("sirin", "Sirin-7B-Instruct", "1.3", "Sirin Labs"),
    DemoModel("alkonost", "Alkonost Chat", "2025.03", "Alkonost AI"),
    DemoModel("gamayun", "Gamayun-13B", "0.9", "НИИ «Гамаюн»"),
    DemoModel("zhar", "Zhar-Ptitsa Large", "3.1", "Zhar-Ptitsa Team"),
)


@dataclass(frozen=True)
class DemoInstruction:
    key: str
    task_path: str
    complexity: str
    text: str
    answers: dict[str, str]
    reference: str = ""


DEMO_INSTRUCTIONS: tuple[DemoInstruction, ...] = (
    DemoInstruction(
        key="editing-library",
        task_path="Text Transformation / Editing",
        complexity="easy",
        text=(
            "Отредактируй текст объявления: исправь орфографические, пунктуационные и речевые "
            "ошибки, но не меняй смысл и структуру. После текста кратко перечисли, что "
            "исправлено.\n\n"
            "«В следующем месяце в нашей районной библиотеке начнется ремонт, по этому "
            "читальный зал будет закрыт с 3 по 28 число. Книги можно будет вернуть через ящик "
            "у входа, который работает круглосуточно. Мы извиняемся за доставленные неудобства "
            "и надеемся, что после ремонта библиотека станет ещё уютнее, а так же в ней "
            "появится детский уголок и зона для настольных игр.»"
        ),
        reference=(
            "«В следующем месяце в нашей районной библиотеке начнётся ремонт, поэтому читальный "
            "зал будет закрыт с 3-го по 28-е число. Книги можно будет вернуть через "
            "круглосуточный ящик у входа. Приносим извинения за доставленные неудобства и "
            "надеемся, что после ремонта библиотека станет ещё уютнее, а также в ней появятся "
            "детский уголок и зона для настольных игр.»\n\n"
            "Исправлено: «по этому» → «поэтому»; «с 3 по 28 число» → «с 3-го по 28-е число»; "
            "двусмысленное «ящик у входа, который работает круглосуточно» → «круглосуточный "
            "ящик у входа»; «Мы извиняемся» → «Приносим извинения»; «а так же» → «а также»; "
            "согласование: «появится … уголок и зона» → «появятся»."
        ),
        answers={
            "sirin": (
                "«В следующем месяце в нашей районной библиотеке начнётся ремонт, поэтому "
                "читальный зал будет закрыт с 3-го по 28-е число. Книги можно будет вернуть "
                "через круглосуточный ящик у входа. Приносим извинения за доставленные "
                "неудобства и надеемся, что после ремонта библиотека станет ещё уютнее, а также "
                "в ней появятся детский уголок и зона для настольных игр.»\n\n"
                "Что исправлено:\n"
                "1. «по этому» → «поэтому» (союз пишется слитно).\n"
                "2. «с 3 по 28 число» → «с 3-го по 28-е число» (порядковые числительные).\n"
                "3. «ящик у входа, который работает круглосуточно» → «круглосуточный ящик у "
                "входа»: придаточное можно было отнести ко входу.\n"
                "4. «Мы извиняемся» → «Приносим извинения» (нормативная форма в официальном "
                "объявлении).\n"
                "5. «а так же» → «а также» (союз).\n"
                "6. «появится» → «появятся»: однородных подлежащих два."
            ),
            "alkonost": (
                "Уважаемые читатели!\n\n"
                "С 3 по 28 число следующего месяца читальный зал нашей библиотеки будет закрыт "
                "на ремонт. Вернуть книги можно в любое время через ящик у входа.\n\n"
                "После ремонта вас ждут обновлённые интерьеры, детский уголок и зона для "
                "настольных игр! Приносим извинения за временные неудобства.\n\n"
                "Исправления: текст переписан для лучшей читаемости, исправлены ошибки."
            ),
            "gamayun": (
                "В следующем месяце в нашей районной библиотеке начнётся ремонт, поэтому "
                "читальный зал будет закрыт с 3 по 28 число. Книги можно будет вернуть через "
                "ящик у входа, который работает круглосуточно. Приносим извинения за "
                "доставленные неудобства и надеемся, что после ремонта библиотека станет ещё "
                "уютнее, а так же в ней появится детский уголок и зона для настольных игр.\n\n"
                "Исправлено: «по этому» на «поэтому», «Мы извиняемся» на «Приносим извинения»."
            ),
        },
    ),
    DemoInstruction(
        key="summary-tram",
        task_path="Text Transformation / Summarizing / Brief retelling / Journalistic text",
        complexity="medium",
        text=(
            "Перескажи заметку кратко, в 3–4 предложениях, для утренней рассылки городского "
            "портала. Сохрани все даты и цифры, которые важны читателю.\n\n"
            "«С 1 октября в Северогорске начнёт работать новый трамвайный маршрут № 12. Он "
            "свяжет микрорайон Заречный с железнодорожным вокзалом и пройдёт через новый мост "
            "через реку Светлую, открытый летом. Протяжённость маршрута — 14 км, на линии "
            "будут работать 18 низкопольных вагонов, интервал в часы пик составит 6 минут. "
            "Как пояснили в департаменте транспорта, поездка от Заречного до вокзала займёт "
            "около 35 минут вместо нынешних 55 на автобусе № 40. Сам автобус № 40 продолжит "
            "работать, но с увеличенным интервалом — 15 минут вместо 10. Стоимость проезда "
            "не изменится: 45 рублей по карте „Северок“ и 60 рублей при оплате банковской "
            "картой. Жители Заречного давно просили о трамвае: петиция о продлении линии в "
            "2021 году собрала более 9 тысяч подписей.»"
        ),
        answers={
            "zhar": (
                "С 1 октября в Северогорске запускают трамвайный маршрут № 12 от микрорайона "
                "Заречный до вокзала через новый мост через Светлую. На 14-километровой линии "
                "будут курсировать 18 низкопольных вагонов с интервалом 6 минут в часы пик, а "
                "дорога займёт около 35 минут вместо 55 на автобусе. Автобус № 40 останется, но "
                "будет ходить реже — раз в 15 минут. Проезд стоит по-прежнему 45 рублей по "
                "карте „Северок“ и 60 рублей по банковской карте."
            ),
            "sirin": (
                "В Северогорске с 1 октября откроется трамвайный маршрут № 12, который соединит "
                "Заречный с вокзалом. Поездка займёт 35 минут. Автобус № 40 отменят. Жители "
                "собрали 9 тысяч подписей за трамвай."
            ),
            "alkonost": (
                "Хорошая новость для жителей Заречного! Уже с 1 октября по новому мосту через "
                "реку Светлую пойдёт трамвай № 12 — до вокзала можно будет доехать всего за 35 "
                "минут. На маршрут выйдут 18 современных низкопольных вагонов, которые будут "
                "ходить каждые 6 минут в часы пик. Цены на проезд не меняются. Наконец-то "
                "многолетние просьбы горожан услышаны, а город делает ещё один шаг к удобному "
                "и экологичному транспорту будущего!"
            ),
        },
    ),
    DemoInstruction(
        key="popsci-sky",
        task_path="Original Text Generation / Scientific text / Popular science text",
        complexity="medium",
        text=(
            "Напиши научно-популярный текст (до 2000 знаков) для подростков 12–14 лет о том, "
            "почему небо днём голубое, а на закате красное. Без формул, но с одним простым "
            "опытом, который можно повторить дома."
        ),
        answers={
            "sirin": (
                "**Почему небо голубое, а закат красный**\n\n"
                "Солнечный свет кажется белым, но на самом деле это смесь всех цветов радуги. "
                "Проверить легко: луч, прошедший через призму или капли дождя, распадается на "
                "цветную полоску.\n\n"
                "Когда свет входит в атмосферу, он встречает на пути молекулы азота и "
                "кислорода. Они намного меньше длины световой волны и поэтому рассеивают свет "
                "— отправляют его в разные стороны. Важно, что синие и фиолетовые лучи "
                "рассеиваются гораздо сильнее красных. Поэтому, куда бы вы ни посмотрели днём, "
                "в глаза попадает в основном рассеянный синий свет, и всё небо кажется "
                "голубым. Фиолетового в солнечном свете меньше, а наш глаз к нему менее "
                "чувствителен, поэтому небо не фиолетовое.\n\n"
                "На закате Солнце стоит низко, и его лучам приходится проходить через толщу "
                "воздуха в десятки раз больше, чем в полдень. По дороге почти весь синий свет "
                "рассеивается в стороны, и до нас доходят лучи, которые рассеиваются слабее "
                "всего, — оранжевые и красные.\n\n"
                "**Опыт: закат в стакане**\n\n"
                "Понадобятся прозрачный стакан воды, пол чайной ложки молока и фонарик. "
                "Размешайте молоко в воде и в тёмной комнате посветите фонариком в стакан "
                "сбоку. Если смотреть на стакан сбоку, вода будет слегка голубоватой — это "
                "«дневное небо». А если посмотреть на фонарик сквозь стакан, свет покажется "
                "оранжево-жёлтым — это «закат»: синие лучи рассеялись по дороге, а до глаза "
                "дошли красные и жёлтые.\n\n"
                "Так что цвет неба — это не краска и не отражение моря, а след того, как "
                "воздух по-разному обращается с разными цветами света."
            ),
            "zhar": (
                "Вы когда-нибудь задумывались, почему небо голубое? Многие думают, что оно "
                "отражает океан, но это миф: над пустыней небо такое же голубое.\n\n"
                "Всё дело в рассеянии света. Солнечный свет состоит из разных цветов, и каждый "
                "цвет — это волна своей длины. У красного света волна длинная, у синего — "
                "короткая. Молекулы воздуха рассеивают короткие волны гораздо сильнее длинных. "
                "Учёные называют это рэлеевским рассеянием в честь британского физика лорда "
                "Рэлея, который объяснил его в XIX веке. Синий свет «разбрасывается» по всему "
                "небу, и мы видим его со всех сторон.\n\n"
                "Вечером свет идёт к нам через атмосферу наискосок, путь получается очень "
                "длинным, и синие лучи успевают рассеяться, не дойдя до нас. Остаются жёлтые, "
                "оранжевые и красные — отсюда цвет заката. Если в воздухе много пыли или дыма, "
                "закаты становятся особенно яркими.\n\n"
                "Попробуйте дома: налейте воду в стеклянную банку, добавьте немного молока и "
                "посветите фонариком сбоку. Сбоку вода будет голубоватой, а свет фонарика, если "
                "смотреть сквозь банку, — оранжевым."
            ),
            "gamayun": (
                "Небо голубое, потому что красный свет рассеивается в атмосфере сильнее всего, "
                "и остаётся только голубой. На закате, наоборот, рассеивается голубой, и мы "
                "видим красный. Опыт: посмотрите на небо через синее стекло — оно станет ещё "
                "голубее."
            ),
        },
    ),
    DemoInstruction(
        key="poetry-snow",
        task_path="Original Text Generation / Literary text / Poetry",
        complexity="hard",
        text=(
            "Напиши стихотворение из трёх четверостиший о первом снеге в большом городе. "
            "Размер — четырёхстопный ямб, рифмовка перекрёстная (АБАБ). Без слов «чудо» и "
            "«волшебство»."
        ),
        answers={
            "sirin": (
                "Проснулся город в тишине,\n"
                "И крыши стали вдруг светлей,\n"
                "Снежинки кружат в полусне\n"
                "Над серой сеткой тополей.\n\n"
                "Звенит трамвай, скользя во мгле,\n"
                "Прохожий ловит снег рукой,\n"
                "И тают звёзды на стекле\n"
                "Под жёлтой лампой над рекой.\n\n"
                "А завтра — слякоть и туман,\n"
                "И снег сойдёт, как не бывал,\n"
                "Но этот утренний обман\n"
                "Я, как подарок, принимал."
            ),
            "gamayun": (
                "Первый снег упал на город,\n"
                "Стал прохладным серый двор.\n"
                "Дети радостно смеются,\n"
                "Санки тащат на бугор.\n\n"
                "Снег лежит на всех машинах,\n"
                "На деревьях и витринах,\n"
                "Белым стал весь старый парк,\n"
                "И фонарь горит во мрак.\n\n"
                "Скоро Новый год настанет,\n"
                "Всех снежинками обманет,\n"
                "Первый снег — как волшебство,\n"
                "Городское торжество."
            ),
        },
    ),
    DemoInstruction(
        key="letter-delay",
        task_path=(
            "Original Text Generation / Official text / Business text (business correspondence)"
        ),
        complexity="medium",
        text=(
            "Составь деловое письмо от ООО «Северный ветер» поставщику ООО «ТехноСнаб» о "
            "задержке поставки 40 ноутбуков по договору № 17/24 от 12 февраля 2024 г. (срок "
            "поставки по договору — 15 марта). Попроси в течение трёх рабочих дней сообщить "
            "новую дату поставки и напомни о неустойке по п. 6.2 договора. Тон — вежливый, но "
            "твёрдый. Подпись — коммерческий директор А. В. Рябов."
        ),
        answers={
            "sirin": (
                "Генеральному директору ООО «ТехноСнаб»\n"
                "г-ну Н. С. Ершову\n\n"
                "Исх. № 112 от 20.03.2024\n\n"
                "О задержке поставки по договору № 17/24\n\n"
                "Уважаемый Николай Сергеевич!\n\n"
                "В соответствии с договором поставки № 17/24 от 12 февраля 2024 г. ООО "
                "«ТехноСнаб» обязалось поставить в адрес ООО «Северный ветер» 40 (сорок) "
                "ноутбуков в срок до 15 марта 2024 г. На сегодняшний день поставка не "
                "осуществлена, уведомлений о причинах задержки в наш адрес не поступало.\n\n"
                "Просим в течение трёх рабочих дней с момента получения настоящего письма "
                "сообщить новую дату поставки и причины её переноса.\n\n"
                "Напоминаем, что согласно п. 6.2 договора за нарушение сроков поставки "
                "поставщик уплачивает неустойку. Мы рассчитываем на урегулирование ситуации без "
                "применения этой меры, однако оставляем за собой право предъявить требование об "
                "уплате неустойки.\n\n"
                "Надеемся на дальнейшее плодотворное сотрудничество.\n\n"
                "С уважением,\n"
                "коммерческий директор ООО «Северный ветер»\n"
                "А. В. Рябов"
            ),
            "alkonost": (
                "Добрый день, коллеги!\n\n"
                "Пишем по поводу ноутбуков по договору № 17/24. Срок поставки был 15 марта, но "
                "ноутбуки до сих пор не пришли. Нам они очень нужны, так как мы открываем новый "
                "офис. Подскажите, пожалуйста, когда ждать поставку?\n\n"
                "Заранее спасибо!\n\n"
                "А. В. Рябов"
            ),
            "zhar": (
                "ООО «ТехноСнаб»\n\n"
                "ПРЕТЕНЗИЯ\n\n"
                "ООО «Северный ветер» уведомляет вас о существенном нарушении условий договора "
                "№ 17/24 от 12.02.2024: 40 ноутбуков не поставлены в срок до 15.03.2024. "
                "Требуем в течение трёх рабочих дней сообщить новую дату поставки. В случае "
                "непредоставления ответа мы будем вынуждены расторгнуть договор, взыскать "
                "неустойку по п. 6.2 в полном объёме и обратиться в арбитражный суд.\n\n"
                "Коммерческий директор\n"
                "ООО «Северный ветер» А. В. Рябов"
            ),
        },
    ),
    DemoInstruction(
        key="factcheck-baikal",
        task_path="QA / Fact checking",
        complexity="easy",
        text=(
            "Проверь утверждение и объясни, верно ли оно: «Байкал — самое глубокое озеро в "
            "мире, а в нём содержится около 20 % мировых запасов пресной поверхностной воды»."
        ),
        reference=(
            "Утверждение верно. Байкал — самое глубокое озеро на Земле: его наибольшая глубина "
            "около 1642 м. В нём около 23 тыс. км³ воды — примерно пятая часть (около 20 %) "
            "мировых запасов пресной поверхностной воды."
        ),
        answers={
            "sirin": (
                "Утверждение верно.\n\n"
                "1. Байкал — самое глубокое озеро мира: максимальная глубина около 1642 м. "
                "Второе место занимает Танганьика (около 1470 м).\n"
                "2. Объём воды в Байкале — около 23 600 км³, это примерно 20 % мировых запасов "
                "пресной поверхностной воды (больше, чем во всех Великих американских озёрах "
                "вместе взятых)."
            ),
            "gamayun": (
                "Утверждение неверно. Самое глубокое озеро в мире — Танганьика в Африке, его "
                "глубина превышает 2000 м, а Байкал занимает второе место. При этом Байкал "
                "действительно содержит около 20 % пресной воды."
            ),
            "alkonost": (
                "Утверждение верно лишь частично. Байкал действительно самое глубокое озеро на "
                "планете (1642 м), но доля его воды в мировых запасах пресной воды обычно "
                "оценивается в 10 %."
            ),
        },
    ),
    DemoInstruction(
        key="factcheck-wall",
        task_path="QA / Fact checking",
        complexity="easy",
        text=(
            "Правда ли, что Великую Китайскую стену видно невооружённым глазом с Луны? Ответь "
            "коротко и обоснуй."
        ),
        reference=(
            "Нет. Луна находится примерно в 384 тыс. км от Земли; при ширине стены в несколько "
            "метров её угловой размер в десятки тысяч раз меньше предела разрешения глаза. "
            "Даже с низкой околоземной орбиты (около 400 км) различить стену без оптики очень "
            "трудно, о чём рассказывали космонавты и астронавты."
        ),
        answers={
            "zhar": (
                "Нет, это миф. С Луны, то есть примерно с 384 000 км, не видно ни одного "
                "отдельного сооружения — только материки, океаны и облака. Ширина стены — "
                "всего 5–8 метров, это примерно как волос, рассматриваемый с расстояния в "
                "несколько километров. Даже с Международной космической станции (около 400 км) "
                "стену почти невозможно заметить без фотоаппарата с длиннофокусным объективом: "
                "она сливается с окружающим ландшафтом по цвету."
            ),
            "sirin": (
                "Нет, с Луны стену не видно — слишком далеко. Но с орбиты МКС её легко увидеть "
                "невооружённым глазом: это единственное рукотворное сооружение, заметное из "
                "космоса."
            ),
        },
    ),
    DemoInstruction(
        key="code-anagrams",
        task_path="Technical Problems / Code creation / Python",
        complexity="medium",
        text=(
            "Напиши на Python функцию `group_anagrams(words: list[str]) -> list[list[str]]`, "
            "которая группирует слова-анаграммы. Регистр не учитывается; группы идут в порядке "
            "первого появления слова, слова внутри группы — в порядке входного списка. "
            "Приведи пример использования."
        ),
        reference=(
            "```python\n"
            "def group_anagrams(words: list[str]) -> list[list[str]]:\n"
            "    groups: dict[str, list[str]] = {}\n"
            "    for word in words:\n"
            "        groups.setdefault(''.join(sorted(word.lower())), []).append(word)\n"
            "    return list(groups.values())\n"
            "```\n\n"
            "Словарь в Python сохраняет порядок вставки, поэтому группы идут в порядке первого "
            "появления. `group_anagrams(['Пила', 'липа', 'кот', 'ток', 'пали'])` → "
            "`[['Пила', 'липа', 'пали'], ['кот', 'ток']]`."
        ),
        answers={
            "sirin": (
                "Идея: у анаграмм одинаковый набор букв, поэтому ключом группы можно сделать "
                "отсортированные буквы слова в нижнем регистре. Обычный `dict` в Python 3.7+ "
                "сохраняет порядок вставки — это и даёт нужный порядок групп.\n\n"
                "```python\n"
                "from collections import defaultdict\n\n\n"
                "def group_anagrams(words: list[str]) -> list[list[str]]:\n"
                '    """Группирует слова-анаграммы без учёта регистра."""\n'
                "    groups: defaultdict[str, list[str]] = defaultdict(list)\n"
                "    for word in words:\n"
                '        key = "".join(sorted(word.lower()))\n'
                "        groups[key].append(word)\n"
                "    return list(groups.values())\n\n\n"
                'if __name__ == "__main__":\n'
                '    print(group_anagrams(["Пила", "липа", "кот", "ток", "пали", "окно"]))\n'
                "    # [['Пила', 'липа', 'пали'], ['кот', 'ток'], ['окно']]\n"
                "```\n\n"
                "Сложность — O(n · k log k), где n — число слов, k — длина самого длинного "
                "слова."
            ),
            "gamayun": (
                "```python\n"
                "def group_anagrams(words):\n"
                "    result = {}\n"
                "    for w in set(words):\n"
                "        key = ''.join(sorted(w.lower()))\n"
                "        result.setdefault(key, []).append(w)\n"
                "    return list(result.values())\n"
                "```\n\n"
                "Пример: `group_anagrams(['кот', 'ток', 'окно'])` вернёт "
                "`[['кот', 'ток'], ['окно']]`."
            ),
            "alkonost": (
                "Вот решение:\n\n"
                "```python\n"
                "def group_anagrams(words: list[str]) -> list[list[str]]:\n"
                "    groups = []\n"
                "    for word in words:\n"
                "        for group in groups:\n"
                "            if sorted(group[0]) == sorted(word):\n"
                "                group.append(word)\n"
                "                break\n"
                "        else:\n"
                "            groups.append([word])\n"
                "    return groups\n\n\n"
                "print(group_anagrams(['Пила', 'липа', 'кот', 'ток']))\n"
                "```\n\n"
                "Функция проходит по словам и добавляет каждое в подходящую группу или создаёт "
                "новую."
            ),
        },
    ),
    DemoInstruction(
        key="stem-stone",
        task_path="Technical Problems / STEM exercises / Physics",
        complexity="medium",
        text=(
            "Камень бросили вертикально вверх со скоростью 15 м/с с балкона высотой 20 м. "
            "Через какое время он упадёт на землю? Сопротивлением воздуха пренебречь, "
            "g = 10 м/с². Приведи решение."
        ),
        reference=(
            "Ось вверх, начало отсчёта на земле: y(t) = 20 + 15t − 5t². Камень на земле при "
            "y = 0: 5t² − 15t − 20 = 0, t² − 3t − 4 = 0, t = 4 с (корень t = −1 с не подходит). "
            "Ответ: 4 с."
        ),
        answers={
            "sirin": (
                "Направим ось Y вверх, начало отсчёта — на земле. Тогда координата камня:\n\n"
                "y(t) = h + v₀t − gt²/2 = 20 + 15t − 5t².\n\n"
                "Камень упадёт на землю, когда y = 0:\n\n"
                "20 + 15t − 5t² = 0 → t² − 3t − 4 = 0.\n\n"
                "Дискриминант D = 9 + 16 = 25, корни t = (3 ± 5) / 2, то есть t = 4 с или "
                "t = −1 с. Отрицательный корень физического смысла не имеет.\n\n"
                "**Ответ: 4 с.**\n\n"
                "Проверка: подъём длится v₀/g = 1,5 с, камень поднимется на 11,25 м, то есть "
                "на высоту 31,25 м над землёй; падение с неё занимает √(2·31,25/10) = 2,5 с; "
                "1,5 + 2,5 = 4 с."
            ),
            "zhar": (
                "Время подъёма до верхней точки: t₁ = v₀ / g = 15 / 10 = 1,5 с.\n"
                "Столько же камень падает обратно до уровня балкона: t₂ = 1,5 с.\n"
                "Итого t = t₁ + t₂ = 3 с.\n\n"
                "Ответ: камень упадёт через 3 с."
            ),
            "gamayun": "20 + 15t − 5t² = 0, t = 4 с.",
        },
    ),
    DemoInstruction(
        key="stem-breakeven",
        task_path="Technical Problems / STEM exercises / Economics",
        complexity="easy",
        text=(
            "Фирма продаёт товар по 500 руб. за штуку. Постоянные издержки — 120 000 руб. в "
            "месяц, переменные — 300 руб. на единицу. Найди точку безубыточности в штуках и "
            "прибыль при продаже 1000 шт. Оформи расчёт для объёмов 400, 600, 800 и 1000 шт. "
            "в виде таблицы."
        ),
        reference=(
            "Точка безубыточности: 120 000 / (500 − 300) = 600 шт. Прибыль при 1000 шт.: "
            "1000 · 500 − (120 000 + 1000 · 300) = 80 000 руб. По объёмам 400/600/800/1000 шт. "
            "прибыль равна −40 000, 0, 40 000 и 80 000 руб."
        ),
        answers={
            "alkonost": (
                "Маржинальный доход с единицы: 500 − 300 = 200 руб.\n\n"
                "Точка безубыточности: 120 000 / 200 = **600 шт.**\n\n"
                "| Объём, шт. | Выручка, руб. | Совокупные издержки, руб. | Прибыль, руб. |\n"
                "|---:|---:|---:|---:|\n"
                "| 400 | 200 000 | 240 000 | −40 000 |\n"
                "| 600 | 300 000 | 300 000 | 0 |\n"
                "| 800 | 400 000 | 360 000 | 40 000 |\n"
                "| 1000 | 500 000 | 420 000 | 80 000 |\n\n"
                "Совокупные издержки = 120 000 + 300 · Q. При продаже 1000 шт. прибыль "
                "составит **80 000 руб.**"
            ),
            "gamayun": (
                "Точка безубыточности = постоянные издержки / цена = 120 000 / 500 = 240 шт. "
                "При 1000 шт. выручка 500 000 руб., прибыль = 500 000 − 120 000 = 380 000 руб. "
                "При 400 шт. прибыль 80 000, при 600 — 180 000, при 800 — 280 000 руб."
            ),
        },
    ),
    DemoInstruction(
        key="character-support",
        task_path="AI as a Character / Formal setting / Providing services",
        complexity="medium",
        text=(
            "Ты — оператор службы поддержки интернет-провайдера «Сеть-Плюс». Клиент пишет в "
            "чат: «Третий день по вечерам пропадает интернет, я работаю из дома, это "
            "невозможно! Верните деньги за месяц!» Ответь клиенту от лица оператора."
        ),
        answers={
            "sirin": (
                "Здравствуйте! Меня зовут Ольга, я оператор «Сеть-Плюс». Понимаю, как это "
                "неприятно, особенно когда от связи зависит работа, — извините за "
                "неудобства.\n\n"
                "Давайте разберёмся. Подскажите, пожалуйста:\n"
                "1. Номер договора или адрес подключения.\n"
                "2. Примерно в какое время пропадает интернет и надолго ли.\n"
                "3. Горит ли в этот момент индикатор «Интернет» на роутере.\n\n"
                "Я проверю линию и, если неполадка на нашей стороне, сразу оформлю заявку на "
                "выезд мастера. Перерасчёт за время без связи делается по заявке: я зарегистрирую "
                "её вместе с обращением, и после подтверждения неполадки сумма будет учтена в "
                "следующем счёте."
            ),
            "zhar": (
                "Здравствуйте! Как языковая модель, я не имею доступа к вашему договору, но "
                "могу сказать, что вам обязательно вернут деньги за весь месяц — я уже всё "
                "оформил. Попробуйте перезагрузить роутер, обычно это помогает. Хорошего "
                "вечера!"
            ),
        },
    ),
    DemoInstruction(
        key="translation-bees",
        task_path=(
            "Text Transformation / Translation, English-Russian language pair / Texts / "
            "Informative translation"
        ),
        complexity="medium",
        text=(
            "Переведи на русский язык, сохрани стиль научно-популярной заметки:\n\n"
            "“Honeybees communicate the location of food sources through the so-called waggle "
            "dance. The direction of the dance relative to gravity indicates the angle between "
            "the food source and the sun, while the duration of the waggle run encodes the "
            "distance. Remarkably, bees can adjust this information for the movement of the sun "
            "during the day.”"
        ),
        reference=(
            "Медоносные пчёлы сообщают друг другу, где находится источник корма, с помощью так "
            "называемого виляющего танца. Направление танца относительно силы тяжести указывает "
            "угол между источником корма и солнцем, а продолжительность виляющего пробега "
            "кодирует расстояние. Удивительно, но пчёлы умеют вносить в эту информацию "
            "поправку на движение солнца в течение дня."
        ),
        answers={
            "alkonost": (
                "Медоносные пчёлы сообщают сородичам, где находится корм, с помощью так "
                "называемого виляющего танца. Направление танца относительно вертикали "
                "указывает угол между источником корма и солнцем, а продолжительность "
                "виляющего пробега передаёт расстояние до него. Поразительно, но пчёлы умеют "
                "учитывать и то, что солнце в течение дня перемещается по небу."
            ),
            "gamayun": (
                "Медовые пчёлы коммуницируют местоположение источников еды через так "
                "называемый танец покачивания. Направление танца относительно гравитации "
                "индицирует угол между источником еды и солнцем, в то время как длительность "
                "бега покачивания кодирует дистанцию. Примечательно, пчёлы могут "
                "адаптировать эту информацию для движения солнца во время дня."
            ),
            "sirin": (
                "Пчёлы-медоносы указывают друг другу, где искать нектар, исполняя особый "
                "виляющий танец. Направление танца показывает угол между кормом и солнцем, а "
                "скорость танца говорит о расстоянии. Удивительно, что пчёлы учитывают даже "
                "движение солнца в течение дня."
            ),
        },
    ),
)


def text_hash(text: str) -> str:
    """The Answer.text_hash fingerprint: sha256 of the text as stored."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def instruction_external_id(item: DemoInstruction) -> str:
    return f"demo-{item.key}"


def answer_external_id(item: DemoInstruction, model_key: str) -> str:
    return f"demo-{item.key}-{model_key}"


@dataclass
class DemoReport:
    created: dict[str, int] = field(default_factory=dict)
    answer_ids: list[int] = field(default_factory=list)

    def add(self, model: str, n: int) -> None:
        if n:
            self.created[model] = self.created.get(model, 0) + n


def demo_user_ensure(person: DemoPerson, report: DemoReport, **flags: Any) -> Any:
    """Create the account with the demo password; an existing one keeps the password it has."""
    user_model = get_user_model()
    user = user_model.objects.filter(username=person.username).first()
    if user is None:
        user = user_model.objects.create_user(
            username=person.username,
            password=DEMO_PASSWORD,
            email=f"{person.username}@demo.pollux.invalid",
            first_name=person.first_name,
            last_name=person.last_name,
            **flags,
        )
        report.add("User", 1)
    return user


@transaction.atomic
def demo_people_ensure(report: DemoReport) -> None:
    """Admin, supervisor and experts with their panels (the panels must exist)."""
    panels = {panel.key: panel for panel in Panel.objects.all()}
    demo_user_ensure(DEMO_ADMIN, report, is_staff=True, is_superuser=True)
    supervisor = demo_user_ensure(DEMO_SUPERVISOR, report)
    # add() skips pairs already present, so rerunning adds nothing.
    for key in DEMO_SUPERVISOR.panels:
        panels[key].supervisors.add(supervisor)
    report.add("GuidelineVersion", demo_guidelines_ensure(supervisor))

    memberships = []
    for person in DEMO_EXPERTS:
        user = demo_user_ensure(person, report)
        expert, created = Expert.objects.get_or_create(user=user, defaults=person.profile)
        report.add("Expert", int(created))
        memberships += [Membership(expert=expert, panel=panels[key]) for key in person.panels]
    before = Membership.objects.count()
    Membership.objects.bulk_create(memberships, ignore_conflicts=True)
    report.add("Membership", Membership.objects.count() - before)


@transaction.atomic
def demo_material_ensure(report: DemoReport) -> None:
    """Models, instructions and answers, in bulk, found again by their natural keys."""
    before = LanguageModel.objects.count()
    LanguageModel.objects.bulk_create(
        [LanguageModel(name=m.name, version=m.version, provider=m.provider) for m in DEMO_MODELS],
        ignore_conflicts=True,
    )
    report.add("LanguageModel", LanguageModel.objects.count() - before)
    by_name = {(lm.name, lm.version): lm for lm in LanguageModel.objects.all()}
    models = {m.key: by_name[(m.name, m.version)] for m in DEMO_MODELS}

    paths = {item.task_path for item in DEMO_INSTRUCTIONS}
    tasks = {t.path: t for t in Task.objects.filter(is_leaf=True, path__in=paths)}
    missing = paths - tasks.keys()
    if missing:
        raise LookupError(f"catalogue leaves not found (is POLLUX loaded?): {sorted(missing)}")

    wanted = [instruction_external_id(item) for item in DEMO_INSTRUCTIONS]
    existing = set(
        Instruction.objects.filter(external_id__in=wanted).values_list("external_id", flat=True)
    )
    new_instructions = [
        Instruction(
            external_id=instruction_external_id(item),
            text=item.text,
            reference_answer=item.reference,
            task=tasks[item.task_path],
            style=tasks[item.task_path].style,
            complexity=item.complexity,
            author="Pollux Studio",
            source=DEMO_SOURCE,
        )
        for item in DEMO_INSTRUCTIONS
        if instruction_external_id(item) not in existing
    ]
    Instruction.objects.bulk_create(new_instructions)
    report.add("Instruction", len(new_instructions))
    instructions = dict(
        Instruction.objects.filter(external_id__in=wanted).values_list("external_id", "id")
    )

    wanted_answers = [
        answer_external_id(item, key) for item in DEMO_INSTRUCTIONS for key in item.answers
    ]
    existing = set(
        Answer.objects.filter(external_id__in=wanted_answers).values_list("external_id", flat=True)
    )
    new_answers = [
        Answer(
            external_id=answer_external_id(item, key),
            instruction_id=instructions[instruction_external_id(item)],
            model=models[key],
            text=text,
            text_hash=text_hash(text),
            generation_meta={"temperature": 0.7, "max_new_tokens": 1024, "demo": True},
        )
        for item in DEMO_INSTRUCTIONS
        for key, text in item.answers.items()
        if answer_external_id(item, key) not in existing
    ]
    Answer.objects.bulk_create(new_answers)
    report.add("Answer", len(new_answers))
    report.answer_ids = list(
        Answer.objects.filter(external_id__in=wanted_answers)
        .order_by("id")
        .values_list("id", flat=True)
    )


DEMO_PRACTICE_TITLE = "Тренировка перед экзаменом"
DEMO_PRACTICE_PANELS = ("science", "literature", "editing")


def demo_practice_ensure(report: DemoReport) -> None:
    """A practice exam (training before the exam) of one demo panel: one demo answer it scores,
    with a reference score and an explanation on each of its criteria. Found again by title."""
    if Exam.objects.filter(title=DEMO_PRACTICE_TITLE).exists():
        return
    supervisor = get_user_model().objects.filter(username=DEMO_SUPERVISOR.username).first()
    answers = list(Answer.objects.filter(pk__in=report.answer_ids).order_by("id"))
    for key in DEMO_PRACTICE_PANELS:
        panel = Panel.objects.filter(key=key).first()
        if panel is None:
            continue
        for answer in answers:
            criteria = [
                c for c in control_reference_criteria(panel=panel, answer=answer) if c.rubric
            ]
            if criteria:
                _practice_create(panel, answer, criteria, supervisor)
                report.add("Exam", 1)
                return


def _practice_create(panel: Panel, answer: Answer, criteria: list[Any], user: Any) -> None:
    exam = exam_create(
        panel=panel, title=DEMO_PRACTICE_TITLE, user=user, mode=ExamMode.PRACTICE, is_active=True
    )
    exam, item = exam_item_add(exam=exam, answer=answer, user=user)
    rows = []
    for criterion in criteria:
        values = criterion.rubric.values
        # A critical gate's top value is the violation: the clean answer has none.
        score = values[0] if criterion.group == "critical" else values[-1]
        why = (
            f"Нарушения «{criterion.name_ru}» в ответе нет, поэтому {score}."
            if criterion.group == "critical"
            else f"Ответ полностью соответствует критерию «{criterion.name_ru}», поэтому {score}."
        )
        rows.append(ReferenceInput(item.scored_answer_id, criterion.pk, score, comment=why))
    exam_references_set(exam=exam, rows=rows, user=user)


def demo_seed() -> DemoReport:
    """People and material of the demo; the catalogue and panels must be loaded first."""
    report = DemoReport()
    demo_people_ensure(report)
    demo_material_ensure(report)
    demo_practice_ensure(report)
    return report
